/* symbolic.c — the symbolic simplifier (reference section 5; tinygrad uop/symbolic.py): three rule tiers, each a
 * superset of the one before, plus simplify / ssimplify / resolve.
 *
 *   sym_symbolic_simple  Invalid propagation, identities, zero folding, bool algebra, constant folding, cast/bitcast
 *                        folding, pow by a constant, simple WHERE folding, movement-op cleanup
 *   sym_symbolic         + canonical operand order of index ops, like terms, constant re-association, bounds
 *                        folding, comparison folding, long->int narrowing, AFTER/END cleanup, div/mod (divmod.c)
 *   sym_sym              + valid simplification (divmod.c), load/store folding, reciprocal and reduce rules
 *
 * Rule order is tinygrad's: the first rule that answers wins. Callbacks build results with the same operations
 * tinygrad's UOp arithmetic uses (weak Python-number constants, dtype promotion); constants they build are folded by
 * the rewrite that follows, as in tinygrad. */
#include "symbolic.h"

#include <math.h>

/* ================================================================================================================
 * UOp arithmetic as tinygrad's mixins do it
 * ================================================================================================================ */

static UOp *wint(int64_t v) { return uop_const(DT_WEAKINT, const_int(v)); }
static UOp *wnum(Const v) { return uop_const(v.kind == CK_FLOAT ? DT_WEAKFLOAT : v.kind == CK_BOOL ? DT_BOOL : DT_WEAKINT, v); }

static bool is_scalar_dt(const DType *d) { return !d->is_ptr && d->count == 1; }

/* _broadcasted: both operands at their least upper dtype; a weak CONST stays weak (of the result's kind) */
static UOp *promote_to(UOp *t, const DType *out) {
  if (t->dtype == out || uop_is_invalid(t)) return t;
  if (dt_is_weak(t->dtype) && t->op == TG_OP_CONST) return uop_const(dt_weak(out), t->arg.c);
  return uop_cast(t, out);
}
static UOp *bop(TgOp op, UOp *a, UOp *b) {
  if (a->dtype != b->dtype && is_scalar_dt(a->dtype) && is_scalar_dt(b->dtype) && !uop_is_invalid(a) &&
      !uop_is_invalid(b)) {
    const DType *out = dt_least_upper(a->dtype, b->dtype);
    a = promote_to(a, out);
    b = promote_to(b, out);
  }
  return uop_alu2(op, a, b);
}
static UOp *bop_i(TgOp op, UOp *a, int64_t v) { return bop(op, a, wint(v)); }
static UOp *sadd(UOp *a, UOp *b) { return bop(TG_OP_ADD, a, b); }
static UOp *smul(UOp *a, UOp *b) { return bop(TG_OP_MUL, a, b); }
static UOp *sneg(UOp *x) { return x->dtype == DT_BOOL ? uop_not(x) : bop_i(TG_OP_MUL, x, -1); }
static UOp *ssub(UOp *a, UOp *b) { return sadd(a, sneg(b)); }
static UOp *slt(UOp *a, UOp *b) { return bop(TG_OP_CMPLT, a, b); }
static UOp *slnot(UOp *x) { return uop_ne(uop_cast(x, DT_BOOL), uop_const_bool(true)); }
static UOp *swhere(UOp *c, UOp *t, UOp *f) {
  if (t->dtype != f->dtype && is_scalar_dt(t->dtype) && is_scalar_dt(f->dtype) && !uop_is_invalid(t) &&
      !uop_is_invalid(f)) {
    const DType *out = dt_least_upper(t->dtype, f->dtype);
    t = promote_to(t, out);
    f = promote_to(f, out);
  }
  return uop_where(c, t, f);
}
static UOp *srecip(UOp *x) { return uop_alu1(TG_OP_RECIPROCAL, x); }
/* a node like u with other sources (dtype re-derived), keeping the tag */
static UOp *with_src(const UOp *u, UOp *const *src, size_t n) { return uop_replace_src(u, src, n); }

/* ---- constant values ---- */

static bool cval_int(const UOp *u, i128 *v) {
  if (u->op != TG_OP_CONST || (u->arg.c.kind != CK_INT && u->arg.c.kind != CK_BOOL)) return false;
  *v = dt_const_as_i128(u->arg.c, u->dtype);
  return true;
}
static bool fits64(i128 v) { return v >= INT64_MIN && v <= INT64_MAX; }
static double cval_double(const UOp *u) { return dt_const_as_double(u->arg.c, u->dtype); }
static bool cval_truthy(const UOp *u) {
  Const c = u->arg.c;
  switch (c.kind) {
  case CK_BOOL: return c.b;
  case CK_INT: return c.i != 0;
  case CK_FLOAT: return c.f != 0.0;
  case CK_NONE: case CK_INVALID: return true;
  }
  return true;
}
/* a CONST whose value equals the integer v (0 == 0.0 == False, as Python compares) */
static bool cval_is(const UOp *u, int64_t v) {
  if (u->op != TG_OP_CONST) return false;
  if (u->arg.c.kind == CK_FLOAT) return u->arg.c.f == (double)v;
  i128 x;
  return cval_int(u, &x) && x == v;
}
/* vmin == vmax, and that value is a real number (not a saturated "unbounded" end) that fits an int64 */
static bool bounds_single(UOp *u, int64_t *v) {
  i128 lo = uop_vmin(u), hi = uop_vmax(u);
  if (lo != hi || lo == I128_MIN || lo == I128_MAX || !fits64(lo)) return false;
  *v = (int64_t)lo;
  return true;
}
static UOp *const_like_i(const UOp *like, int64_t v) {
  if (like->dtype == DT_BOOL) return uop_const_bool(v != 0);
  return uop_const_like_int(like, v);
}

/* the identity-element split of tinygrad's pop_const: x == peeled OP c */
static UOp *pop_const(UOp *x, TgOp op, i128 *c) {
  if (x->op == op && x->nsrc == 2 && cval_int(x->src[1], c)) return x->src[0];
  *c = op == TG_OP_MUL ? 1 : 0;
  return x;
}

static UOp *usum_vec(const UOpVec *v, const UOp *like) { return uop_usum(v->data, v->len, like); }

/* ================================================================================================================
 * pm_data_invalid: Invalid poisons values; ops move inside where(cond, x, Invalid) gates so masks reach LOAD/STORE
 * ================================================================================================================ */

static UOp *inv_unary_into_gate(RwCtx *rw, UOp *root, UOp **m) { /* op, cond, x, i */
  TG_UNUSED(rw);
  UOp *x = m[2];
  return uop_where(m[1], with_src(root, &x, 1), m[3]);
}
static UOp *inv_binary_left(RwCtx *rw, UOp *root, UOp **m) { /* alu, cond, x, i, y */
  TG_UNUSED(rw);
  return uop_where(m[1], uop_alu2(uop_op(root), m[2], m[4]), m[3]);
}
static UOp *inv_binary_right(RwCtx *rw, UOp *root, UOp **m) { /* alu, y, cond, x, i */
  TG_UNUSED(rw);
  return uop_where(m[2], uop_alu2(uop_op(root), m[1], m[3]), m[4]);
}
static UOp *inv_gated_cond(RwCtx *rw, UOp *root, UOp **m) { /* cond, x, i, a, b */
  TG_UNUSED(rw), TG_UNUSED(root);
  return uop_where(m[0], swhere(m[1], m[3], m[4]), m[2]);
}
static UOp *inv_normalize(RwCtx *rw, UOp *root, UOp **m) { /* cond, i, val */
  TG_UNUSED(rw), TG_UNUSED(root);
  return uop_is_invalid(m[2]) ? m[1] : uop_where(slnot(m[0]), m[2], m[1]);
}
static UOp *inv_lift_true(RwCtx *rw, UOp *root, UOp **m) { /* a, cond, x, i, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  if (uop_is_invalid(m[4])) return NULL;
  return uop_where(bop(TG_OP_OR, slnot(m[0]), m[1]), swhere(m[0], m[2], m[4]), m[3]);
}
static UOp *inv_lift_false(RwCtx *rw, UOp *root, UOp **m) { /* a, b, cond, x, i */
  TG_UNUSED(rw), TG_UNUSED(root);
  if (uop_is_invalid(m[1])) return NULL;
  return uop_where(bop(TG_OP_OR, m[0], m[2]), swhere(m[0], m[1], m[3]), m[4]);
}
static UOp *inv_store_noop(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root), TG_UNUSED(m);
  return uop_new(TG_OP_NOOP, DT_VOID, NULL, 0, arg_none());
}
static UOp *inv_load(RwCtx *rw, UOp *root, UOp **m) { /* x */
  TG_UNUSED(rw), TG_UNUSED(m);
  return root->nsrc > 1 ? root->src[1] : const_like_i(root, 0);
}

#define BINARY_NO_CMP "ADD|MUL|SHL|SHR|CDIV|MAX|CMOD|XOR|OR|AND|THREEFRY|SUB|FDIV|POW|FLOORDIV|FLOORMOD"
#define INV_GATE "(WHERE cond x i:invalid)"
#define INV_INDEX "{(INDEX _ i:invalid ...)|(CAST (INDEX _ i:invalid ...))}"

static const Rule data_invalid_rules[] = {
    RULE("(STACK *i:invalid)", NULL, "i"),
    RULE("(Unary|CAST|BITCAST i:invalid)", NULL, "i"),
    RULE("op:(Unary|CAST|BITCAST " INV_GATE ")", inv_unary_into_gate, NULL),
    /* binary ops move inside the gate, with Invalid in the false branch */
    RULE("alu:(=Binary " INV_GATE " y)", inv_binary_left, NULL),
    RULE("alu:(=Binary y " INV_GATE ")", inv_binary_right, NULL),
    RULE("{(=" BINARY_NO_CMP " i:invalid _)|(=" BINARY_NO_CMP " _ i:invalid)}", NULL, "i"),
    /* an Invalid condition poisons the whole where; a gated condition lifts the gate out */
    RULE("(WHERE i:invalid _ _)", NULL, "i"),
    RULE("(WHERE " INV_GATE " a b)", inv_gated_cond, NULL),
    /* where(cond, Invalid, val) -> where(!cond, val, Invalid) */
    RULE("(WHERE cond i:invalid val)", inv_normalize, NULL),
    /* lift Invalid out of a branch */
    RULE("(WHERE a " INV_GATE " c)", inv_lift_true, NULL),
    RULE("(WHERE a b " INV_GATE ")", inv_lift_false, NULL),
    /* a store / load at an Invalid index */
    RULE("(STORE " INV_INDEX " _)", inv_store_noop, NULL),
    RULE("x:(LOAD " INV_INDEX " ...)", inv_load, NULL),
};

/* ================================================================================================================
 * symbolic_simple
 * ================================================================================================================ */

/* tinygrad _quotient_base: the B with q == B//div and B%div == base%div, or NULL */
static UOp *quotient_base(UOp *q, UOp *base, i128 div) {
  i128 s, a, qd, c, D, xa, pa;
  q = pop_const(q, TG_OP_ADD, &s);
  UOp *num = pop_const(base, TG_OP_ADD, &a);
  if (q->op != TG_OP_FLOORDIV || !cval_int(q->src[1], &qd)) return NULL;
  if (div > 0 && num->op == TG_OP_FLOORDIV && cval_int(num->src[1], &c) && qd == c * div) {
    num = num->src[0];
    a = a * c;
    D = c * div;
  } else if (qd == div) {
    D = div;
  } else {
    return NULL;
  }
  if (D == 0) return NULL;
  UOp *x = pop_const(num, TG_OP_ADD, &xa);
  UOp *p = pop_const(q->src[0], TG_OP_ADD, &pa);
  i128 t = xa + a - pa;
  if (p != x || t % D != 0) return NULL;
  i128 k = t / D - s;
  if (!k) return base;
  if (!fits64(k * div)) return NULL;
  return ssub(base, wint((int64_t)(k * div)));
}

static bool small128(i128 v) { return v > -((i128)1 << 62) && v < ((i128)1 << 62); }

/* variations of (x%c)+(x//c)*c = x, also the partial recombination into a wider mod */
static UOp *fold_add_divmod_recombine(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  UOpVec terms = {0};
  uop_split(root, TG_OP_ADD, &terms);
  UOp *res = NULL;
  for (size_t i = 0; i < terms.len && !res; i++) {
    i128 mul, div, scale, d;
    UOp *mod = pop_const(terms.data[i], TG_OP_MUL, &mul);
    if (mod->op != TG_OP_FLOORMOD || !cval_int(mod->src[1], &div) || !small128(mul) || !small128(div)) continue;
    UOp *base = mod->src[0];
    for (size_t j = 0; j < terms.len && !res; j++) {
      UOp *q = pop_const(terms.data[j], TG_OP_MUL, &scale);
      if (i == j || scale != div * mul) continue;
      UOpVec rest = {0};
      for (size_t k = 0; k < terms.len; k++)
        if (k != i && k != j) tg_vec_push(&rest, terms.data[k]);
      UOp *b = quotient_base(q, base, div);
      if (b) {
        res = bop_i(TG_OP_MUL, b, (int64_t)mul);
        for (size_t k = 0; k < rest.len; k++) res = sadd(res, rest.data[k]);
      } else if (q->op == TG_OP_FLOORMOD && cval_int(q->src[1], &d) && d > 0 && small128(d) &&
                 (b = quotient_base(q->src[0], base, div)) != NULL && fits64(div * d)) {
        res = bop_i(TG_OP_MUL, bop_i(TG_OP_FLOORMOD, b, (int64_t)(div * d)), (int64_t)mul);
        for (size_t k = 0; k < rest.len; k++) res = sadd(res, rest.data[k]);
      }
      tg_vec_free(&rest);
    }
  }
  tg_vec_free(&terms);
  return res;
}

static UOp *bool_and_const(RwCtx *rw, UOp *root, UOp **m) { /* x, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  return cval_truthy(m[1]) ? m[0] : m[1];
}
static UOp *bool_or_const(RwCtx *rw, UOp *root, UOp **m) { /* x, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  return cval_truthy(m[1]) ? m[1] : m[0];
}
static UOp *not_x(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return slnot(m[0]);
}
/* CAST(bool -> int) != c: CAST(True) = 1, CAST(False) = 0 */
static UOp *cast_bool_ne(RwCtx *rw, UOp *root, UOp **m) { /* x, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  if (cval_is(m[1], 0)) return m[0];
  if (cval_is(m[1], 1)) return slnot(m[0]);
  return uop_const_bool(true);
}
static UOp *const_false(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root), TG_UNUSED(m);
  return uop_const_bool(false);
}
static UOp *const_zero_like_x(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return const_like_i(m[0], 0);
}
static UOp *const_one_like_x(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return const_like_i(m[0], 1);
}
static UOp *neg_x(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return sneg(m[0]);
}
/* (x & mask) >> k -> x >> k when mask only clears bits below k */
static UOp *masked_shr(RwCtx *rw, UOp *root, UOp **m) { /* x, mask, k */
  TG_UNUSED(rw), TG_UNUSED(root);
  i128 mask, k;
  if (!cval_int(m[1], &mask) || !cval_int(m[2], &k) || k < 0 || k > 120) return NULL;
  if ((mask | (((i128)1 << (int)k) - 1)) != -1) return NULL;
  return bop(TG_OP_SHR, m[0], wint((int64_t)k));
}
/* (x & mask) // c -> x // c for a power-of-two c when mask only clears bits below it */
static UOp *masked_floordiv(RwCtx *rw, UOp *root, UOp **m) { /* x, mask, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  i128 mask, c;
  if (!cval_int(m[1], &mask) || !cval_int(m[2], &c) || c <= 0 || (c & (c - 1)) != 0 || !fits64(c)) return NULL;
  if ((mask | (c - 1)) != -1) return NULL;
  return bop(TG_OP_FLOORDIV, m[0], wint((int64_t)c));
}

/* a CAST to a concrete dtype over a CONST is a value conversion at the CAST's width */
static UOp *fold_cast_const(RwCtx *rw, UOp *root, UOp **m) { /* root, c */
  TG_UNUSED(rw), TG_UNUSED(m);
  const DType *d = root->dtype;
  UOp *c = root->src[0];
  if (!is_scalar_dt(d) || d->kind == DTK_VOID || dt_is_weak(d)) return NULL;
  if (uop_is_invalid(c)) return c;
  Const v = dt_const_from(d, c->arg.c, c->dtype);
  if (v.kind == CK_NONE) return NULL;
  return uop_const(d, v);
}

/* fold an ALU over CONSTs (and STACKs of CONSTs, lane by lane) */
static UOp *fold_const_alu(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  uint32_t n = root->nsrc, lanes = 0;
  if (n == 0 || n > 3) return NULL;
  for (uint32_t i = 0; i < n; i++) {
    UOp *s = root->src[i];
    if (s->op == TG_OP_STACK) {
      for (uint32_t l = 0; l < s->nsrc; l++)
        if (s->src[l]->op != TG_OP_CONST) return NULL;
      if (s->nsrc > lanes) lanes = s->nsrc;
    } else if (s->op != TG_OP_CONST) {
      return NULL;
    }
  }
  /* comparisons evaluate at the operands' dtype; everything else at the result's */
  const DType *d = root->dtype->scalar;
  if (op_has(uop_op(root), OPP_COMPARISON)) {
    const DType *a = root->src[0]->dtype->scalar, *b = root->src[1]->dtype->scalar;
    d = a == b ? a : dt_least_upper(a, b);
  }
  if (lanes == 0) {
    Const v[3];
    for (uint32_t i = 0; i < n; i++) v[i] = root->src[i]->arg.c;
    Const r = dt_const_exec_alu(uop_op(root), d, v, (int)n);
    if (r.kind == CK_NONE) return NULL;
    return uop_const(root->dtype, r);
  }
  UOp **out = tg_malloc(lanes * sizeof(UOp *));
  for (uint32_t l = 0; l < lanes; l++) {
    Const v[3];
    for (uint32_t i = 0; i < n; i++) {
      UOp *s = root->src[i];
      if (s->op == TG_OP_STACK && l >= s->nsrc) { tg_free(out); return NULL; }
      v[i] = s->op == TG_OP_STACK ? s->src[l]->arg.c : s->arg.c;
    }
    Const r = dt_const_exec_alu(uop_op(root), d, v, (int)n);
    if (r.kind == CK_NONE) { tg_free(out); return NULL; }
    out[l] = uop_const(root->dtype->scalar, r);
  }
  UOp *res = uop_new(TG_OP_STACK, NULL, out, lanes, arg_none());
  tg_free(out);
  return res;
}

static UOp *bool_and(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return bop(TG_OP_AND, m[0], m[1]);
}
static UOp *bool_or(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return bop(TG_OP_OR, m[0], m[1]);
}
static UOp *nan_like_x(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return uop_const_like(m[0], const_float(NAN));
}
/* x*0 -> 0, but nan*0 / inf*0 -> nan */
static UOp *mul_zero(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *x = m[0];
  if (x->op == TG_OP_CONST && x->arg.c.kind == CK_FLOAT && (isnan(x->arg.c.f) || isinf(x->arg.c.f)))
    return uop_const_like(x, const_float(NAN));
  return const_like_i(x, 0);
}
static UOp *same_dtype_cast(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  return root->nsrc == 1 && root->dtype == root->src[0]->dtype ? root->src[0] : NULL;
}
static UOp *fold_bitcast(RwCtx *rw, UOp *root, UOp **m) { /* root, c */
  TG_UNUSED(rw), TG_UNUSED(m);
  UOp *c = root->src[0];
  const DType *from = c->dtype, *to = root->dtype;
  /* tinygrad: only dtypes with a struct format (no weak, bfloat16 or fp8) */
  if (!is_scalar_dt(to) || dt_is_weak(from) || dt_is_weak(to) || from->id == TG_BFLOAT16 || to->id == TG_BFLOAT16 ||
      from->id == TG_FP8E4M3 || from->id == TG_FP8E5M2 || from->id == TG_FP8E4M3FNUZ || from->id == TG_FP8E5M2FNUZ ||
      to->id == TG_FP8E4M3 || to->id == TG_FP8E5M2 || to->id == TG_FP8E4M3FNUZ || to->id == TG_FP8E5M2FNUZ ||
      dt_itemsize(from) != dt_itemsize(to) || uop_is_invalid(c))
    return NULL;
  Const v = dt_const_bitcast(c->arg.c, from, to);
  return v.kind == CK_NONE ? NULL : uop_const(to, v);
}
/* b.cast(a).cast(b) -> b if a preserves all values of b */
static UOp *cast_roundtrip(RwCtx *rw, UOp *root, UOp **m) { /* b, a, x */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *b = m[0], *a = m[1], *x = m[2];
  return x->dtype == b->dtype && dt_can_lossless_cast(b->dtype, a->dtype) ? x : NULL;
}
static UOp *bitcast_twice(RwCtx *rw, UOp *root, UOp **m) { /* b, x */
  TG_UNUSED(rw), TG_UNUSED(root);
  return uop_bitcast(m[1], m[0]->dtype);
}
static UOp *cast_to_bool(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return bop(TG_OP_CMPNE, m[0], wint(0));
}
static UOp *pow_num(UOp *x, Const v) { return bop(TG_OP_POW, x, wnum(v)); }
static UOp *simplify_pow(RwCtx *rw, UOp *root, UOp **m) { /* x, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *x = m[0], *c = m[1];
  Const cv = c->arg.c;
  if (cv.kind == CK_INVALID || cv.kind == CK_NONE) return NULL;
  bool is_f = cv.kind == CK_FLOAT;
  double v = cval_double(c);
  if (isnan(v) || isinf(v)) return NULL;
  if (v < 0) return pow_num(srecip(x), is_f ? const_float(-v) : const_int((int64_t)-v));
  if (v == 0) return const_like_i(x, 1);
  if (fabs(v) > 9e15) return NULL;
  if (trunc(v - 0.5) + 0.5 == v) return smul(pow_num(x, const_float(v - 0.5)), uop_alu1(TG_OP_SQRT, x));
  if (trunc(v) == v) {
    double half = floor(v / 2);
    UOp *y = pow_num(x, is_f ? const_float(half) : const_int((int64_t)half));
    UOp *yy = smul(y, y);
    return fmod(v, 2) == 1 ? smul(yy, x) : smul(yy, wint(1));
  }
  return NULL;
}
/* positive const ** x -> exp2(x * log2(c)) */
static UOp *pow_const_base(RwCtx *rw, UOp *root, UOp **m) { /* c, x */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *c = m[0], *x = m[1];
  if (c->arg.c.kind == CK_INVALID) return NULL;
  double v = cval_double(c);
  if (v == 1) return c;
  if (!(v > 0)) return NULL;
  return uop_alu1(TG_OP_EXP2, smul(x, uop_const(DT_WEAKFLOAT, const_float(log2(v)))));
}
static UOp *cast_x_u64(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return uop_cast(m[0], DT_UINT64);
}
/* folding a strong-dtype WHERE to a weak const branch keeps the strong dtype */
static UOp *fold_const_where(RwCtx *rw, UOp *root, UOp **m) { /* w, gate, c0, c1 */
  TG_UNUSED(rw), TG_UNUSED(root);
  if (uop_is_invalid(m[1])) return NULL;
  UOp *ret = cval_truthy(m[1]) ? m[2] : m[3];
  if (ret->op == TG_OP_CONST && dt_is_weak(ret->dtype) && !dt_is_weak(m[0]->dtype)) return uop_commit_weak(ret, m[0]->dtype);
  return ret;
}
static UOp *where_and(RwCtx *rw, UOp *root, UOp **m) { /* a, b, c, d */
  TG_UNUSED(rw), TG_UNUSED(root);
  return swhere(bop(TG_OP_AND, m[0], m[1]), m[2], m[3]);
}
static UOp *where_or(RwCtx *rw, UOp *root, UOp **m) { /* a, c, b, d */
  TG_UNUSED(rw), TG_UNUSED(root);
  return swhere(bop(TG_OP_OR, m[0], m[2]), m[1], m[3]);
}

/* ---- movement cleanup (tinygrad mop_cleanup), the rules that need no shapes ---- */

static UOp *merge_reshapes(RwCtx *rw, UOp *root, UOp **m) { /* x, x2 */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *src[2] = {m[1]->src[0], m[0]->src[1]};
  return with_src(m[0], src, 2);
}
static UOp *merge_permutes(RwCtx *rw, UOp *root, UOp **m) { /* x, x2 */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *x = m[0], *x2 = m[1];
  if (x->arg.kind != ARG_PERM || x2->arg.kind != ARG_PERM || x->arg.len != x2->arg.len) return NULL;
  int64_t *perm = tg_malloc((x->arg.len + 1) * sizeof(int64_t));
  for (uint32_t i = 0; i < x->arg.len; i++) {
    int64_t k = x->arg.ints[i];
    if (k < 0 || (uint32_t)k >= x2->arg.len) { tg_free(perm); return NULL; }
    perm[i] = x2->arg.ints[k];
  }
  UOp *r = uop_new_tagged(TG_OP_PERMUTE, x2->dtype, x2->src, x2->nsrc, arg_ints(ARG_PERM, perm, x->arg.len), x2->tag);
  tg_free(perm);
  return r;
}
static UOp *noop_permute(RwCtx *rw, UOp *root, UOp **m) { /* x */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *x = m[0];
  if (x->arg.kind != ARG_PERM || x->nsrc < 1) return NULL;
  for (uint32_t i = 0; i < x->arg.len; i++)
    if (x->arg.ints[i] != (int64_t)i) return NULL;
  return x->src[0];
}
/* a const INDEX into a STACK is that element */
static UOp *index_stack_const(RwCtx *rw, UOp *root, UOp **m) { /* idx, a, i */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *idx = m[0], *a = m[1];
  i128 i;
  if (!cval_int(m[2], &i) || i < 0 || i >= a->nsrc) return NULL;
  UOp *el = a->src[(size_t)i];
  if (idx->nsrc <= 2) return el;
  UOp **src = tg_malloc(idx->nsrc * sizeof(UOp *));
  src[0] = el;
  for (uint32_t k = 2; k < idx->nsrc; k++) src[k - 1] = idx->src[k];
  UOp *r = uop_new(TG_OP_INDEX, NULL, src, idx->nsrc - 1, arg_none());
  tg_free(src);
  return r;
}

static const Rule simple_rules[] = {
    /* ** self folding ** */
    RULE("(ADD|XOR|OR x 0)", NULL, "x"),
    RULE("(SHL|SHR x 0)", NULL, "x"),
    RULE("(MUL x 1)", NULL, "x"),
    RULE("(FLOORDIV x x)", const_one_like_x, NULL),
    RULE("(FLOORDIV x 1)", NULL, "x"),
    RULE("(FLOORDIV x -1)", neg_x, NULL),
    RULE("(XOR (XOR x y) y)", NULL, "x"),
    RULE("(FLOORMOD base:(FLOORMOD _ y) y)", NULL, "base"),
    RULE("x:ADD.weakint", fold_add_divmod_recombine, NULL),
    RULE("(AND x.bool c:CONST)", bool_and_const, NULL),
    RULE("(OR x.bool c:CONST)", bool_or_const, NULL),
    RULE("(CMPNE.bool x.bool false.bool)", NULL, "x"),
    RULE("(OR|AND|MAX x x)", NULL, "x"),
    RULE("(CMPNE.bool (CMPNE.bool x.bool true) true)", NULL, "x"),
    RULE("(WHERE.bool x.bool true.bool false.bool)", NULL, "x"),
    RULE("(WHERE.bool x.bool false.bool true.bool)", not_x, NULL),
    RULE("(CMPNE.bool (CAST.index x.bool) c:CONST)", cast_bool_ne, NULL),
    RULE("(TRUNC.index|bool x.index|bool)", NULL, "x"),
    /* ** zero folding ** */
    RULE("(CMPLT.bool x x)", const_false, NULL),
    RULE("(FLOORMOD x x)", const_zero_like_x, NULL),
    RULE("(XOR x x)", const_zero_like_x, NULL),
    RULE("(AND x 0)", const_zero_like_x, NULL),
    RULE("(SHR (AND x mask:CONST) k:CONST)", masked_shr, NULL),
    RULE("(FLOORDIV (AND x mask:CONST) c:CONST)", masked_floordiv, NULL),
    RULE("(CMPNE.bool x.index|bool x)", const_false, NULL),
    /* ** constant folding ** */
    RULE("root:(CAST c:CONST)", fold_cast_const, NULL),
    RULE("a:(Unary CONST|STACK)", fold_const_alu, NULL),
    /* NOTE: THREEFRY(const, const) folds through its decomposition */
    RULE("a:(=ADD|MUL|SHL|SHR|CDIV|MAX|CMOD|CMPLT|CMPNE|CMPEQ|XOR|OR|AND|SUB|FDIV|POW|FLOORDIV|FLOORMOD CONST|STACK "
         "CONST|STACK)", fold_const_alu, NULL),
    RULE("a:(Ternary CONST|STACK CONST|STACK CONST|STACK)", fold_const_alu, NULL),
    /* bool MUL is AND, ADD/MAX is OR */
    RULE("(MUL.bool x.bool y.bool)", bool_and, NULL),
    RULE("(ADD.bool x.bool y.bool)", bool_or, NULL),
    RULE("(MAX.bool x.bool y.bool)", bool_or, NULL),
    /* ** div rules (x/y is x*(1/y)) ** */
    RULE("(MUL x:0 (RECIPROCAL 0))", nan_like_x, NULL),
    RULE("(MUL (MUL x 0) (RECIPROCAL 0))", nan_like_x, NULL),
    RULE("(MUL x (RECIPROCAL x))", const_one_like_x, NULL),
    RULE("(MUL (MUL x x2) (RECIPROCAL x2))", NULL, "x"),
    RULE("(MUL x 0)", mul_zero, NULL),
    /* ** cast / bitcast ** */
    RULE("root:CAST|BITCAST", same_dtype_cast, NULL),
    RULE("root:(BITCAST c:CONST)", fold_bitcast, NULL),
    RULE("b:(CAST a:(CAST x))", cast_roundtrip, NULL),
    RULE("b:(BITCAST (BITCAST x))", bitcast_twice, NULL),
    RULE("(CAST.bool x)", cast_to_bool, NULL),
    /* ** pow ** */
    RULE("(POW x c:CONST)", simplify_pow, NULL),
    RULE("(POW c:CONST x)", pow_const_base, NULL),
    /* unpack a uint64 packed from two uint32 (threefry) */
    RULE("(CAST.uint (OR.ulong (SHL _.ulong 32) (CAST.ulong y.uint)))", NULL, "y"),
    RULE("(SHR (OR.ulong (SHL (CAST.ulong x.uint) 32) (CAST.ulong _.uint)) 32)", cast_x_u64, NULL),
    /* ** simple where folding ** */
    RULE("(WHERE _ val val)", NULL, "val"),
    RULE("w:(WHERE gate:CONST c0 c1)", fold_const_where, NULL),
    RULE("(WHERE a (WHERE b c d) d)", where_and, NULL),
    RULE("(WHERE a c (WHERE b c d))", where_or, NULL),
    /* ** movement cleanup ** */
    RULE("x:(RESHAPE x2:RESHAPE _)", merge_reshapes, NULL),
    RULE("x:(PERMUTE x2:PERMUTE)", merge_permutes, NULL),
    RULE("x:PERMUTE", noop_permute, NULL),
    RULE("idx:(INDEX a:STACK i:CONST ...)", index_stack_const, NULL),
};

/* ================================================================================================================
 * commutative: canonical operand order of index math (tinygrad's tuplize order)
 * ================================================================================================================ */

static int cmp_i128(i128 a, i128 b) { return a < b ? -1 : a > b; }
static int cmp_str(const char *a, const char *b) {
  int c = strcmp(a, b);
  return c < 0 ? -1 : c > 0;
}
static const char *dtype_tg_name(const DType *d) { return d->cname && d->cname[0] ? d->cname : d->name; }
/* DType order: (priority, bitsize, name) */
static int cmp_dtype(const DType *a, const DType *b) {
  if (a == b) return 0;
  if (a->priority != b->priority) return a->priority < b->priority ? -1 : 1;
  int ab = a->bitsize * a->count, bb = b->bitsize * b->count;
  if (ab != bb) return ab < bb ? -1 : 1;
  int c = cmp_str(dtype_tg_name(a), dtype_tg_name(b));
  if (c) return c;
  if (a->count != b->count) return a->count < b->count ? -1 : 1;
  return a->is_ptr != b->is_ptr ? (a->is_ptr ? 1 : -1) : 0;
}
static int cmp_const(Const a, const DType *da, Const b, const DType *db) {
  bool ia = a.kind == CK_INVALID || a.kind == CK_NONE, ib = b.kind == CK_INVALID || b.kind == CK_NONE;
  if (ia || ib) return ia == ib ? 0 : ia ? -1 : 1;
  if (a.kind == CK_FLOAT || b.kind == CK_FLOAT) {
    double x = dt_const_as_double(a, da), y = dt_const_as_double(b, db);
    return x < y ? -1 : x > y; /* nan compares equal to everything, as Python's tuple order sees it */
  }
  return cmp_i128(dt_const_as_i128(a, da), dt_const_as_i128(b, db));
}
static int cmp_arg(const UOp *x, const UOp *y) {
  const Arg *a = &x->arg, *b = &y->arg;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  switch (a->kind) {
  case ARG_NONE: case ARG_KIND_COUNT: return 0;
  case ARG_CONST: return cmp_const(a->c, x->dtype, b->c, y->dtype);
  case ARG_INT: return cmp_i128(a->i, b->i);
  case ARG_OP: return cmp_i128(a->op, b->op);
  case ARG_REDUCE: return a->red.op != b->red.op ? cmp_i128(a->red.op, b->red.op) : cmp_i128(a->red.naxes, b->red.naxes);
  case ARG_STR: return cmp_str(a->str, b->str);
  case ARG_PERM: case ARG_FLIP: case ARG_WMMA:
    for (uint32_t i = 0; i < a->len && i < b->len; i++)
      if (a->ints[i] != b->ints[i]) return a->ints[i] < b->ints[i] ? -1 : 1;
    return cmp_i128(a->len, b->len);
  case ARG_RANGE: {
    const RangeArg *p = a->range, *q = b->range;
    if (p->axis_id != q->axis_id) return cmp_i128(p->axis_id, q->axis_id);
    for (int i = 0; i < p->nsub && i < q->nsub; i++)
      if (p->sub[i] != q->sub[i]) return cmp_i128(p->sub[i], q->sub[i]);
    if (p->nsub != q->nsub) return cmp_i128(p->nsub, q->nsub);
    return cmp_i128(p->axis_type, q->axis_type);
  }
  case ARG_PARAM: { /* ParamArg's dataclass order: slot, dtype, vmin_vmax, multiple_of, name, ... */
    const ParamArg *p = a->param, *q = b->param;
    int c;
    if (p->slot != q->slot) return cmp_i128(p->slot, q->slot);
    if (p->dtype && q->dtype && (c = cmp_dtype(p->dtype, q->dtype))) return c;
    if (p->vmin != q->vmin) return cmp_i128(p->vmin, q->vmin);
    if (p->vmax != q->vmax) return cmp_i128(p->vmax, q->vmax);
    if (p->multiple_of != q->multiple_of) return cmp_i128(p->multiple_of, q->multiple_of);
    if ((c = cmp_str(p->name, q->name))) return c;
    if (p->addrspace != q->addrspace) return cmp_i128(p->addrspace, q->addrspace);
    if (p->axis != q->axis) return cmp_i128(p->axis, q->axis);
    if ((c = cmp_str(p->device, q->device))) return c;
    return cmp_i128(p->is_volatile, q->is_volatile);
  }
  case ARG_KERNEL: return cmp_str(a->kernel->name, b->kernel->name);
  }
  return 0;
}

/* tinygrad's tuplize order: (op, arg, dtype, *sources) compared lexicographically. Iterative (deep graphs). */
static int tuplize_cmp(UOp *a, UOp *b) {
  typedef struct { UOp *a, *b; uint32_t next; } Frame;
  TG_VEC(Frame) st = {0};
  int result = 0;
  Frame f0 = {a, b, 0};
  tg_vec_push(&st, f0);
  bool fresh = true;
  while (st.len) {
    Frame *f = &st.data[st.len - 1];
    if (fresh) {
      fresh = false;
      if (f->a == f->b) { st.len--; continue; }
      int c = cmp_i128(f->a->op, f->b->op);
      if (!c) c = cmp_arg(f->a, f->b);
      if (!c) c = cmp_dtype(f->a->dtype, f->b->dtype);
      if (c) { result = c; break; }
    }
    if (f->next < f->a->nsrc && f->next < f->b->nsrc) {
      Frame nf = {f->a->src[f->next], f->b->src[f->next], 0};
      f->next++;
      tg_vec_push(&st, nf);
      fresh = true;
      continue;
    }
    if (f->a->nsrc != f->b->nsrc) { result = f->a->nsrc < f->b->nsrc ? -1 : 1; break; }
    st.len--;
  }
  tg_vec_free(&st);
  return result;
}

static UOp *flip_commutative(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  if (root->nsrc != 2 || tuplize_cmp(root->src[1], root->src[0]) >= 0) return NULL;
  UOp *src[2] = {root->src[1], root->src[0]};
  return with_src(root, src, 2);
}

static const Rule commutative_rules[] = {
    /* NOTE: this can break merging vector math by only flipping some of them */
    RULE("x:Commutative.weakint", flip_commutative, NULL),
};

/* ================================================================================================================
 * symbolic
 * ================================================================================================================ */

static UOp *const_true(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root), TG_UNUSED(m);
  return uop_const_bool(true);
}
/* like terms: captures are (x, c0, c1) / (y, x, c0, c1) / (x, c) / (y, x, c) / (x) / (y, x) */
static UOp *terms_xc0c1(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return smul(m[0], sadd(m[1], m[2]));
}
static UOp *terms_yxc0c1(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return sadd(m[0], smul(m[1], sadd(m[2], m[3])));
}
static UOp *terms_xc(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return smul(m[0], bop_i(TG_OP_ADD, m[1], 1));
}
static UOp *terms_yxc(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return sadd(m[0], smul(m[1], bop_i(TG_OP_ADD, m[2], 1)));
}
static UOp *terms_xc_y(RwCtx *rw, UOp *root, UOp **m) { /* y, x, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  return sadd(m[0], smul(m[1], bop_i(TG_OP_ADD, m[2], 1)));
}
static UOp *terms_2x(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return bop_i(TG_OP_MUL, m[0], 2);
}
static UOp *terms_y2x(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return sadd(m[0], bop_i(TG_OP_MUL, m[1], 2));
}
/* (x/x2)/x3 -> x/(x2*x3); x/y is x*(1/y) for floats */
static UOp *div_div(RwCtx *rw, UOp *root, UOp **m) { /* x, x2, x3 */
  TG_UNUSED(rw), TG_UNUSED(root);
  if (m[1] == m[2] || !dt_is_float(m[0]->dtype)) return NULL;
  return smul(m[0], srecip(smul(m[1], m[2])));
}
static UOp *neg_x_plus_c(RwCtx *rw, UOp *root, UOp **m) { /* x, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  return sadd(sneg(m[0]), sneg(m[1]));
}
static UOp *distribute_const(RwCtx *rw, UOp *root, UOp **m) { /* y, x, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  return sadd(smul(m[0], m[1]), smul(m[0], m[2]));
}
static UOp *where_not_cond(RwCtx *rw, UOp *root, UOp **m) { /* cond, t, f */
  TG_UNUSED(rw), TG_UNUSED(root);
  return uop_is_invalid(m[2]) ? NULL : swhere(m[0], m[2], m[1]);
}

static bool gate_has_index(const UOp *u, void *ctx) {
  bool *found = ctx;
  if (u->op == TG_OP_INDEX) *found = true;
  return !*found;
}
static bool has_index(UOp *u) {
  bool found = false;
  UOpVec v = {0};
  uop_toposort(u, gate_has_index, &found, &v);
  tg_vec_free(&v);
  return found;
}
/* in cond.where(t, f), uses of cond fold to True within t and False within f */
static UOp *fold_where_closure(RwCtx *rw, UOp *root, UOp **m) { /* cond, t, f */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *cond = m[0], *t = m[1], *f = m[2];
  bool in_t = t == cond || uop_in_backward_slice(t, cond), in_f = f == cond || uop_in_backward_slice(f, cond);
  if (!in_t && !in_f) return NULL;
  /* INDEX gates are owned by the valid/store-coalescing machinery */
  if (has_index(cond) || has_index(t) || has_index(f)) return NULL;
  UOp *tru = uop_const_bool(true), *fal = uop_const_bool(false);
  return swhere(cond, uop_substitute(t, &cond, &tru, 1), uop_substitute(f, &cond, &fal, 1));
}
/* alu of two wheres with the same condition, when one side is all constants */
static UOp *combine_where_alu(RwCtx *rw, UOp *root, UOp **m) { /* alu, c, t, f, tt, ff */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *c = m[1], *t = m[2], *f = m[3], *tt = m[4], *ff = m[5];
  if (!((t->op == TG_OP_CONST && tt->op == TG_OP_CONST) || (f->op == TG_OP_CONST && ff->op == TG_OP_CONST))) return NULL;
  TgOp op = uop_op(m[0]);
  return swhere(c, uop_alu2(op, t, tt), uop_alu2(op, f, ff));
}
static UOp *combine_where_add(RwCtx *rw, UOp *root, UOp **m) { /* y, c, t, f, tt, ff */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *y = m[0], *c = m[1], *t = m[2], *f = m[3], *tt = m[4], *ff = m[5];
  if (!((t->op == TG_OP_CONST && tt->op == TG_OP_CONST) || (f->op == TG_OP_CONST && ff->op == TG_OP_CONST))) return NULL;
  return sadd(y, swhere(c, sadd(t, tt), sadd(f, ff)));
}
static UOp *complementary_where(RwCtx *rw, UOp *root, UOp **m) { /* c, t, f */
  TG_UNUSED(rw), TG_UNUSED(root);
  return swhere(m[0], m[1], m[2]);
}
/* vmin == vmax -> CONST */
static UOp *fold_single_value(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  int64_t v;
  if (!is_scalar_dt(root->dtype) || root->dtype->kind == DTK_VOID) return NULL;
  if (!bounds_single(root, &v)) return NULL;
  return const_like_i(root, v);
}
static UOp *max_from_where_a(RwCtx *rw, UOp *root, UOp **m) { /* a, b, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  if (uop_is_invalid(m[0]) || uop_is_invalid(m[2])) return NULL;
  return dt_const_eq(m[0]->arg.c, m[2]->arg.c) || cval_double(m[0]) == cval_double(m[2]) ? bop(TG_OP_MAX, m[0], m[1]) : NULL;
}
static UOp *max_from_where_b(RwCtx *rw, UOp *root, UOp **m) { /* a, b, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  if (uop_is_invalid(m[1]) || uop_is_invalid(m[2])) return NULL;
  return dt_const_eq(m[1]->arg.c, m[2]->arg.c) || cval_double(m[1]) == cval_double(m[2]) ? bop(TG_OP_MAX, m[0], m[1]) : NULL;
}
static UOp *fold_max_bounds(RwCtx *rw, UOp *root, UOp **m) { /* x, y */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *x = m[0], *y = m[1];
  if (uop_vmin(x) >= uop_vmax(y)) return x;
  if (uop_vmax(x) <= uop_vmin(y)) return y;
  return NULL;
}
/* (x op c1) op c2 -> x op (c1 op c2) for an associative op */
static UOp *two_stage_fold(RwCtx *rw, UOp *root, UOp **m) { /* f, inner, x, c1, c2 */
  TG_UNUSED(rw), TG_UNUSED(root);
  if (m[0]->op != m[1]->op) return NULL;
  TgOp op = uop_op(m[0]);
  return uop_alu2(op, m[2], uop_alu2(op, m[3], m[4]));
}
static UOp *nested_floordiv(RwCtx *rw, UOp *root, UOp **m) { /* x, c1, c2 */
  TG_UNUSED(rw), TG_UNUSED(root);
  return uop_vmin(m[2]) > 0 ? bop(TG_OP_FLOORDIV, m[0], smul(m[1], m[2])) : NULL;
}
static UOp *lt_add_const(RwCtx *rw, UOp *root, UOp **m) { /* c0, x, c1 */
  TG_UNUSED(rw), TG_UNUSED(root);
  return slt(m[1], ssub(m[2], m[0]));
}
/* c0*x < c1 -> sign(c0)*x < ceil(c1/|c0|) */
static UOp *lt_mul_const(RwCtx *rw, UOp *root, UOp **m) { /* c0, x, c1 */
  TG_UNUSED(rw), TG_UNUSED(root);
  i128 c0, c1;
  if (!cval_int(m[0], &c0) || !cval_int(m[2], &c1)) return NULL;
  i128 a = c0 < 0 ? -c0 : c0;
  if (a <= 1 || !small128(c1) || !small128(c0)) return NULL;
  i128 q = -(((-c1) - ((((-c1) % a) + a) % a)) / a); /* -((-c1) // a) */
  return slt(c0 > 0 ? m[1] : sneg(m[1]), wint((int64_t)q));
}
/* x//d < c -> x < c*d for d > 0, c*d < x for d < 0 */
static UOp *lt_floordiv_const(RwCtx *rw, UOp *root, UOp **m) { /* x, d, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  i128 d, c;
  if (!cval_int(m[1], &d) || !cval_int(m[2], &c) || !small128(d) || !small128(c) || !fits64(c * d)) return NULL;
  if (d > 0) return slt(m[0], wint((int64_t)(c * d)));
  if (d < 0) return slt(wint((int64_t)(c * d)), m[0]);
  return NULL;
}
static UOp *move_add_const(RwCtx *rw, UOp *root, UOp **m) { /* x, c1, y */
  TG_UNUSED(rw), TG_UNUSED(root);
  return m[2]->op == TG_OP_CONST ? NULL : sadd(sadd(m[0], m[2]), m[1]);
}
static UOp *move_mul_const(RwCtx *rw, UOp *root, UOp **m) { /* x, c1, y */
  TG_UNUSED(rw), TG_UNUSED(root);
  return m[2]->op == TG_OP_CONST ? NULL : smul(smul(m[0], m[2]), m[1]);
}

/* generic lt folding: terms with a common factor d > 1 and a remainder in [0, d) */
static UOp *lt_folding(RwCtx *rw, UOp *root, UOp **m) { /* x, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  i128 c;
  if (!cval_int(m[1], &c) || c <= 0 || !fits64(c)) return NULL;
  UOpVec terms = {0}, np = {0};
  uop_split(m[0], TG_OP_ADD, &terms);
  int64_t d = (int64_t)c;
  i128 pmin = 0, pmax = 0; /* bounds of the sum of the factor-1 terms (saturating) */
  for (size_t i = 0; i < terms.len; i++) {
    UOp *u = terms.data[i];
    int64_t f = uop_const_factor(u);
    if (f != 1) {
      tg_vec_push(&np, u);
      d = tg_gcd64(d, f);
      continue;
    }
    i128 lo = uop_vmin(u), hi = uop_vmax(u);
    if (__builtin_add_overflow(pmin, lo, &pmin)) pmin = lo < 0 ? I128_MIN : I128_MAX;
    if (__builtin_add_overflow(pmax, hi, &pmax)) pmax = hi > 0 ? I128_MAX : I128_MIN;
  }
  UOp *res = NULL;
  if (np.len && d > 1 && 0 <= pmin && pmax < d) {
    UOp *sum = usum_vec(&np, m[0]);
    UOp *q = uop_divides(sum, d);
    if (q) res = slt(q, wint((int64_t)(c / d)));
  }
  tg_vec_free(&terms);
  tg_vec_free(&np);
  return res;
}
static UOp *lt_neg_swap(RwCtx *rw, UOp *root, UOp **m) { /* x, y */
  TG_UNUSED(rw), TG_UNUSED(root);
  return slt(m[1], m[0]);
}
/* (X := a0*x0 + a1*x1 + ...) > 0 is x0 + x1 + ... > 0 when every xi >= 0 and ai > 0 */
static UOp *canonicalize_simplex(RwCtx *rw, UOp *root, UOp **m) { /* x */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOpVec terms = {0}, ret = {0};
  uop_split(m[0], TG_OP_ADD, &terms);
  bool changed = false, ok = true;
  for (size_t i = 0; i < terms.len && ok; i++) {
    UOp *u = terms.data[i];
    i128 c;
    if (u->op == TG_OP_MUL && cval_int(u->src[1], &c) && c > 0) {
      changed = true;
      u = u->src[0];
    }
    if (!(op_has(uop_op(u), OPP_IRREDUCIBLE) && uop_vmin(u) >= 0)) ok = false;
    else tg_vec_push(&ret, u);
  }
  UOp *res = NULL;
  if (ok && changed) res = uop_ne(slt(usum_vec(&ret, m[0]), wint(1)), uop_const_bool(true));
  tg_vec_free(&terms);
  tg_vec_free(&ret);
  return res;
}
static UOp *zero_like_r(RwCtx *rw, UOp *root, UOp **m) { /* r, end */
  TG_UNUSED(rw), TG_UNUSED(root);
  return const_like_i(m[0], 0);
}
/* if the intermediate cast does not narrow, one cast does it */
static UOp *cast_chain_lossless(RwCtx *rw, UOp *root, UOp **m) { /* b, a, x */
  TG_UNUSED(rw), TG_UNUSED(root);
  return dt_can_lossless_cast(m[2]->dtype, m[1]->dtype) ? uop_cast(m[2], m[0]->dtype) : NULL;
}
static UOp *cast_chain_in_range(RwCtx *rw, UOp *root, UOp **m) { /* b, a, x */
  TG_UNUSED(rw), TG_UNUSED(root);
  const DType *ad = m[1]->dtype;
  return dt_min_int(ad) <= uop_vmin(m[2]) && uop_vmax(m[2]) <= dt_max_int(ad) ? uop_cast(m[2], m[0]->dtype) : NULL;
}
static bool overflows_int32(UOp *u) { return uop_vmin(u) < INT32_MIN || uop_vmax(u) > INT32_MAX; }
/* do math in int instead of long when nothing overflows; weak consts stay weak */
static UOp *narrow_long(RwCtx *rw, UOp *root, UOp **m) { /* u, x, y */
  TG_UNUSED(rw);
  UOp *x = m[1], *y = m[2];
  if (x->dtype != DT_INT64 && y->dtype != DT_INT64) return NULL;
  if (overflows_int32(root) || overflows_int32(x) || overflows_int32(y)) return NULL;
  UOp *nx = x->op == TG_OP_CONST ? wnum(x->arg.c) : uop_cast(x, DT_INT32);
  UOp *ny = y->op == TG_OP_CONST ? wnum(y->arg.c) : uop_cast(y, DT_INT32);
  return uop_cast(uop_alu2(uop_op(root), nx, ny), root->dtype);
}
static UOp *cast_weak_add_const(RwCtx *rw, UOp *root, UOp **m) { /* cast, x, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *cast = m[0];
  return sadd(uop_cast(m[1], cast->dtype), uop_const_like(cast, m[2]->arg.c));
}
/* AFTER keeps only dependencies with side effects (RANGE/STORE/CALL/...), others are looked through */
static UOp *after_cleanup(RwCtx *rw, UOp *root, UOp **m) { /* x */
  TG_UNUSED(rw), TG_UNUSED(m);
  UOpVec deps = {0};
  tg_vec_push(&deps, root->src[0]);
  for (uint32_t i = 1; i < root->nsrc; i++) {
    UOp *y = root->src[i];
    TgOp op = uop_op(y);
    bool keep = op == TG_OP_RANGE || op == TG_OP_STORE || op == TG_OP_CALL || op == TG_OP_FUNCTION ||
                op == TG_OP_BARRIER || op == TG_OP_END || op == TG_OP_LINEAR || op == TG_OP_STAGE;
    uint32_t n = keep ? 1 : y->nsrc;
    for (uint32_t k = 0; k < n; k++) {
      UOp *d = keep ? y : y->src[k];
      bool dup = false;
      for (size_t j = 1; j < deps.len && !dup; j++) dup = deps.data[j] == d;
      if (!dup) tg_vec_push(&deps, d);
    }
  }
  UOp *r = with_src(root, deps.data, deps.len);
  tg_vec_free(&deps);
  return r;
}

static const Rule symbolic_rules[] = {
    /* ** boolean algebra ** */
    RULE("(OR.bool x.bool (CMPNE.bool x.bool true))", const_true, NULL),
    /* ** combine terms ** */
    RULE("(ADD (MUL x c0:CONST) (MUL x c1:CONST))", terms_xc0c1, NULL),
    RULE("(ADD (ADD y (MUL x c0:CONST)) (MUL x c1:CONST))", terms_yxc0c1, NULL),
    RULE("(ADD x (MUL x c:CONST))", terms_xc, NULL),
    RULE("(ADD (ADD y x) (MUL x c:CONST))", terms_yxc, NULL),
    RULE("(ADD (ADD y (MUL x c:CONST)) x)", terms_xc_y, NULL),
    RULE("(ADD x x)", terms_2x, NULL),
    RULE("(ADD (ADD y x) x)", terms_y2x, NULL),
    RULE("(MUL (MUL x (RECIPROCAL x2)) (RECIPROCAL x3))", div_div, NULL),
    RULE("(MUL -1 (ADD x c:CONST))", neg_x_plus_c, NULL),
    RULE("(MUL y:CONST (ADD x.weakint c:CONST))", distribute_const, NULL),
    /* ** where folding ** */
    RULE("(WHERE (CMPNE.bool cond.bool 1) t f)", where_not_cond, NULL),
    RULE("(WHERE cond.bool t f)", fold_where_closure, NULL),
    RULE("alu:(=Binary (WHERE c t f) (WHERE c tt ff))", combine_where_alu, NULL),
    RULE("(ADD (ADD y (WHERE c t f)) (WHERE c tt ff))", combine_where_add, NULL),
    RULE("(ADD (WHERE c t 0) (WHERE c 0 f))", complementary_where, NULL),
    /* ** ALU / variable with vmin == vmax -> CONST ** */
    RULE("x:CMPLT|CMPNE|FLOORDIV|FLOORMOD|PARAM|AFTER|SPECIAL", fold_single_value, NULL),
    RULE("x:(RANGE *CONST)", fold_single_value, NULL),
    /* ** max folding ** */
    RULE("(WHERE (CMPLT.bool a:CONST b) b c:CONST)", max_from_where_a, NULL),
    RULE("(WHERE (CMPLT.bool a b:CONST) c:CONST a)", max_from_where_b, NULL),
    RULE("(MAX x y)", fold_max_bounds, NULL),
    /* ** two stage ALU folding ** */
    RULE("f:(ADD|MUL|MAX|OR|AND g:(ADD|MUL|MAX|OR|AND x c1:CONST) c2:CONST)", two_stage_fold, NULL),
    RULE("(FLOORDIV (FLOORDIV x c1:CONST) c2:CONST)", nested_floordiv, NULL),
    /* ** lt ** */
    RULE("(CMPLT.bool (ADD.index c0:CONST x.index) c1:CONST)", lt_add_const, NULL),
    RULE("(CMPLT.bool (MUL.weakint c0:CONST x.weakint) c1:CONST)", lt_mul_const, NULL),
    RULE("(CMPLT.bool (FLOORDIV x.weakint d:CONST) c:CONST)", lt_floordiv_const, NULL),
    /* ** move add/mul consts to the end ** */
    RULE("(ADD (ADD x c1:CONST) y)", move_add_const, NULL),
    RULE("(MUL (MUL x c1:CONST) y)", move_mul_const, NULL),
    /* ** generic lt folding ** */
    RULE("(CMPLT.bool x.weakint c:CONST)", lt_folding, NULL),
    RULE("(CMPLT.bool (MUL x.weakint -1) (MUL y -1))", lt_neg_swap, NULL),
    /* a simplex with positive coefficients > 0 (not x < 1 means x > 0) */
    RULE("(CMPNE.bool (CMPLT.bool x.weakint 1) 1)", canonicalize_simplex, NULL),
    /* a range mod / div its own upper bound */
    RULE("(FLOORMOD r:(RANGE *end) end)", NULL, "r"),
    RULE("(FLOORDIV r:(RANGE *end) end)", zero_like_r, NULL),
    /* ** cast / long folding ** */
    RULE("b:(CAST a:(CAST x))", cast_chain_lossless, NULL),
    RULE("b:(CAST a:(CAST.index x.index))", cast_chain_in_range, NULL),
    RULE("u:(=Binary x.long|weakint y.long|weakint)", narrow_long, NULL),
    RULE("cast:(CAST.sints (ADD x.weakint c:CONST))", cast_weak_add_const, NULL),
    /* only RANGE/STORE/CALL/... have side effects */
    RULE("x:AFTER", after_cleanup, NULL),
    RULE("(AFTER|END s)", NULL, "s"),
};

/* ================================================================================================================
 * sym
 * ================================================================================================================ */

static UOp *alu_of_stacks(RwCtx *rw, UOp *root, UOp **m) { /* alu, x, y */
  TG_UNUSED(rw);
  UOp *inner = uop_alu2(uop_op(root), m[1], m[2]);
  return uop_new(TG_OP_STACK, NULL, &inner, 1, arg_none());
}
/* push a cast into the branches of a where (weak constants commit at the cast's dtype) */
static UOp *cast_into_where(RwCtx *rw, UOp *root, UOp **m) { /* cast, s, a, b */
  TG_UNUSED(rw), TG_UNUSED(root);
  const DType *d = m[0]->dtype;
  return uop_where(m[1], uop_commit_weak(m[2], d), uop_commit_weak(m[3], d));
}
static UOp *noop_node(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root), TG_UNUSED(m);
  return uop_new(TG_OP_NOOP, DT_VOID, NULL, 0, arg_none());
}
/* buf.index(idx.valid(gate)) */
static UOp *gated_index(UOp *index, UOp *gate) {
  if (index->nsrc < 2) return NULL;
  UOp *src[2] = {index->src[0], uop_where(gate, index->src[1], uop_invalid())};
  return uop_new(TG_OP_INDEX, NULL, src, 2, arg_none());
}
static UOp *store_gated(UOp *index, UOp *gate, UOp *val) {
  UOp *idx = gated_index(index, gate);
  if (!idx) return NULL;
  UOp *src[2] = {idx, val};
  return uop_new(TG_OP_STORE, DT_VOID, src, 2, arg_none());
}
static UOp *store_where_load(RwCtx *rw, UOp *root, UOp **m) { /* index, gate, alt */
  TG_UNUSED(rw), TG_UNUSED(root);
  return store_gated(m[0], m[1], m[2]);
}
static UOp *store_where_invalid(RwCtx *rw, UOp *root, UOp **m) { /* index, cond, val, i */
  TG_UNUSED(rw), TG_UNUSED(root);
  return store_gated(m[0], m[1], m[2]);
}
static UOp *recip_square(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return smul(srecip(m[0]), srecip(m[0]));
}
static UOp *recip_cube(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(root);
  return smul(smul(srecip(m[0]), srecip(m[0])), srecip(m[0]));
}
/* 1/(x*c) -> (1/x)*(1/c). 1/c is folded here, at c's own dtype: a weak c stays a weak (exact) constant, so a later
 * fold with another weak constant rounds once, when the result is committed (seed: single-rounding log10 backward). */
static UOp *recip_mul_const(RwCtx *rw, UOp *root, UOp **m) { /* x, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *c = m[1], *rc = srecip(c);
  if (!uop_is_invalid(c)) {
    Const v = dt_const_exec_alu(TG_OP_RECIPROCAL, rc->dtype, &c->arg.c, 1);
    if (v.kind != CK_NONE) rc = uop_const(rc->dtype, v);
  }
  return smul(srecip(m[0]), rc);
}
static UOp *one_minus(UOp *d) { return sadd(wint(1), sneg(d)); }
static UOp *x_over_1px(RwCtx *rw, UOp *root, UOp **m) { /* x, d */
  TG_UNUSED(rw), TG_UNUSED(root);
  return one_minus(m[1]);
}
static UOp *x_over_1px_mul(RwCtx *rw, UOp *root, UOp **m) { /* x, d, y */
  TG_UNUSED(rw), TG_UNUSED(root);
  return smul(m[2], one_minus(m[1]));
}
static UOp *x_over_1px_add(RwCtx *rw, UOp *root, UOp **m) { /* x, d, y */
  TG_UNUSED(rw), TG_UNUSED(root);
  return sadd(one_minus(m[1]), smul(m[0], m[2]));
}
static bool reduce_is(const UOp *r, TgOp op) {
  if (r->arg.kind == ARG_OP) return r->arg.op == (int32_t)op;
  if (r->arg.kind == ARG_REDUCE) return r->arg.red.op == (int32_t)op && r->arg.red.naxes == 0;
  return false;
}
/* move a const multiply after an ADD REDUCE */
static UOp *reduce_const_mul(RwCtx *rw, UOp *root, UOp **m) { /* r, x, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *r = m[0];
  if (!reduce_is(r, TG_OP_ADD)) return NULL;
  UOp **src = tg_malloc(r->nsrc * sizeof(UOp *));
  src[0] = m[1];
  for (uint32_t i = 1; i < r->nsrc; i++) src[i] = r->src[i];
  UOp *nr = with_src(r, src, r->nsrc);
  tg_free(src);
  return bop(TG_OP_MUL, nr, wnum(m[2]->arg.c));
}
/* move loop-invariant factors of a MUL chain out of an ADD/MAX REDUCE */
static UOp *reduce_mul_chain(RwCtx *rw, UOp *root, UOp **m) { /* r */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *r = m[0];
  bool is_max = reduce_is(r, TG_OP_MAX);
  if (!reduce_is(r, TG_OP_ADD) && !is_max) return NULL;
  if (r->dtype != r->src[0]->dtype) return NULL;
  UOpVec factors = {0}, inside = {0}, outside = {0};
  uop_split(r->src[0], TG_OP_MUL, &factors);
  for (size_t i = 0; i < factors.len; i++) {
    UOp *f = factors.data[i];
    bool out = true;
    for (uint32_t k = 1; k < r->nsrc && out; k++) out = f != r->src[k] && !uop_in_backward_slice(f, r->src[k]);
    if (out && is_max) out = uop_vmin(f) >= 0;
    if (out) tg_vec_push(&outside, f);
    else tg_vec_push(&inside, f);
  }
  UOp *res = NULL;
  if (outside.len) {
    UOp *in = inside.len ? inside.data[0] : const_like_i(r->src[0], 1);
    for (size_t i = 1; i < inside.len; i++) in = smul(in, inside.data[i]);
    UOp **src = tg_malloc(r->nsrc * sizeof(UOp *));
    src[0] = in;
    for (uint32_t k = 1; k < r->nsrc; k++) src[k] = r->src[k];
    res = with_src(r, src, r->nsrc);
    tg_free(src);
    UOp *outp = outside.data[0];
    for (size_t i = 1; i < outside.len; i++) outp = smul(outp, outside.data[i]);
    res = smul(res, outp);
  }
  tg_vec_free(&factors);
  tg_vec_free(&inside);
  tg_vec_free(&outside);
  return res;
}
static UOp *neg_sum(RwCtx *rw, UOp *root, UOp **m) { /* x, y */
  TG_UNUSED(rw), TG_UNUSED(root);
  return sadd(sneg(m[0]), sneg(m[1]));
}
static UOp *distribute_mul(RwCtx *rw, UOp *root, UOp **m) { /* x, y, c */
  TG_UNUSED(rw), TG_UNUSED(root);
  return sadd(smul(m[0], m[2]), smul(m[1], m[2]));
}
/* SINK / GROUP: splice in the sources of NOOP, STACK, SINK and GROUP members */
static UOp *flatten_sink(RwCtx *rw, UOp *root, UOp **m) { /* root */
  TG_UNUSED(rw), TG_UNUSED(m);
  bool any = false;
  for (uint32_t i = 0; i < root->nsrc && !any; i++) {
    TgOp op = uop_op(root->src[i]);
    any = op == TG_OP_NOOP || op == TG_OP_STACK || op == TG_OP_SINK || op == TG_OP_GROUP;
  }
  if (!any) return NULL;
  UOpVec src = {0};
  for (uint32_t i = 0; i < root->nsrc; i++) {
    UOp *x = root->src[i];
    TgOp op = uop_op(x);
    if (op == TG_OP_NOOP || op == TG_OP_STACK || op == TG_OP_SINK || op == TG_OP_GROUP)
      for (uint32_t k = 0; k < x->nsrc; k++) tg_vec_push(&src, x->src[k]);
    else tg_vec_push(&src, x);
  }
  UOp *r = uop_new(uop_op(root), NULL, src.data, src.len, root->arg);
  tg_vec_free(&src);
  return r;
}

static const Rule sym_rules[] = {
    /* reorder ALU / STACK */
    RULE("alu:(ALU (STACK *x) (STACK *y))", alu_of_stacks, NULL),
    /* ** where: push a cast into the branches ** */
    RULE("cast:(CAST (WHERE s a b))", cast_into_where, NULL),
    /* ** load/store folding ** */
    RULE("(STORE index:INDEX (LOAD index:INDEX))", noop_node, NULL),
    RULE("(STORE index:INDEX (WHERE gate alt (LOAD index:INDEX)))", store_where_load, NULL),
    RULE("(STORE _ invalid)", noop_node, NULL),
    RULE("(STORE index:INDEX (WHERE cond val i:invalid))", store_where_invalid, NULL),
    /* ** reciprocal ** */
    RULE("(RECIPROCAL (MUL x x))", recip_square, NULL),
    RULE("(RECIPROCAL (MUL (MUL x x) x))", recip_cube, NULL),
    RULE("(RECIPROCAL (MUL x c:CONST))", recip_mul_const, NULL),
    RULE("(MUL x d:(RECIPROCAL (ADD 1 x)))", x_over_1px, NULL),
    RULE("(MUL x (MUL d:(RECIPROCAL (ADD 1 x)) y))", x_over_1px_mul, NULL),
    RULE("(MUL x (ADD d:(RECIPROCAL (ADD 1 x)) y))", x_over_1px_add, NULL),
    /* ** reduce ** */
    RULE("r:(REDUCE=ADD (MUL x c:CONST) ...)", reduce_const_mul, NULL),
    RULE("r:(REDUCE MUL ...)", reduce_mul_chain, NULL),
    /* ** combine terms (opinionated) ** */
    RULE("(MUL -1 (ADD x y))", neg_sum, NULL),
    /* (x+y)*c -> x*c+y*c, only for index ints (float has inf*0 = nan) */
    RULE("(MUL (ADD x.weakint y) c:CONST)", distribute_mul, NULL),
    /* ** clean up GROUP / SINK ** */
    RULE("(GROUP x)", NULL, "x"),
    RULE("root:SINK|GROUP", flatten_sink, NULL),
};

/* ================================================================================================================
 * the tiers
 * ================================================================================================================ */

const RuleSet *sym_commutative(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("commutative", commutative_rules);
  return pm;
}

/* The tiers are built once and live for the process. The component sets stay referenced from these statics (a
 * concatenation does not own its parts); they double as the "already built" guards. */
static RuleSet *data_invalid_set, *simple_set, *symbolic_set, *sym_set;
static const RuleSet *simple_tier, *symbolic_tier, *sym_tier;

const RuleSet *sym_symbolic_simple(void) {
  if (!data_invalid_set || !simple_set) {
    data_invalid_set = PM_NEW("pm_data_invalid", data_invalid_rules);
    simple_set = PM_NEW("symbolic_simple", simple_rules);
    simple_tier = pm_concat(data_invalid_set, simple_set);
  }
  return simple_tier;
}

const RuleSet *sym_symbolic(void) {
  if (!symbolic_set) {
    symbolic_set = PM_NEW("symbolic", symbolic_rules);
    symbolic_tier =
        pm_concat(pm_concat(pm_concat(sym_symbolic_simple(), sym_commutative()), symbolic_set), sym_div_and_mod());
  }
  return symbolic_tier;
}

const RuleSet *sym_sym(void) {
  if (!sym_set) {
    sym_set = PM_NEW("sym", sym_rules);
    sym_tier = pm_concat(pm_concat(sym_symbolic(), sym_simplify_valid()), sym_set);
  }
  return sym_tier;
}

/* ================================================================================================================
 * entry points
 * ================================================================================================================ */

UOp *uop_simplify(UOp *u) {
  if (u->op == TG_OP_CONST) return u;
  if (u->op == TG_OP_SINK) {
    bool all_const = true;
    for (uint32_t i = 0; i < u->nsrc && all_const; i++)
      all_const = u->src[i]->op == TG_OP_CONST || (u->src[i]->op == TG_OP_STACK && u->src[i]->nsrc == 0);
    if (all_const) return u;
  }
  UOp *r = pm_graph_rewrite(u, sym_symbolic(), NULL, 0, NULL, "simplify");
  return r ? r : u; /* a failed rewrite (error set) leaves the expression as it was, which is still correct */
}

bool uop_ssimplify_int(UOp *u, int64_t *out) {
  UOp *r = uop_simplify(u);
  if (r->op == TG_OP_CAST && r->src[0]->op == TG_OP_CONST) {
    Const c = dt_const_from(r->dtype, r->src[0]->arg.c, r->src[0]->dtype);
    if (c.kind != CK_INT && c.kind != CK_BOOL) return false;
    *out = c.kind == CK_BOOL ? c.b : c.i;
    return true;
  }
  if (r->op != TG_OP_CONST || (r->arg.c.kind != CK_INT && r->arg.c.kind != CK_BOOL)) return false;
  i128 v = dt_const_as_i128(r->arg.c, r->dtype);
  if (!fits64(v)) return false;
  *out = (int64_t)v;
  return true;
}

bool uop_resolve(UOp *u, bool dflt) {
  if (u->dtype != DT_BOOL) return dflt;
  UOp *s = uop_simplify(u);
  i128 lo = uop_vmin(s), hi = uop_vmax(s);
  return lo == hi ? lo != 0 : dflt;
}
