/* mixin_elementwise.c — tinygrad's ElementwiseMixin: dtype promotion of binary operands (_broadcasted: a bare weak
 * CONST stays weak at the promoted kind, everything else is CASTed), broadcasting left to the ALU's shape, and every
 * composite (neg = x*-1, sub = a + -b, div = a * 1/b, exp = exp2(x*1/ln2), activations ...) built from the same UOps
 * in the same order as tinygrad, so the graphs compare equal. */
#include "uop/mixin.h"

#include <math.h>

/* The node under views and gradient markers: a weak CONST stays a Python scalar even when broadcast (tinygrad's
 * _broadcasted looks through the same ops). */
static UOp *ubase(UOp *u) {
  while (u && (op_has(uop_op(u), OPP_MOVEMENT) || u->op == TG_OP_DETACH || u->op == TG_OP_CUSTOM_GRAD)) u = u->src[0];
  return u;
}

/* One operand at the promoted dtype: a (broadcast) weak CONST is re-made at the weak form of `out`, so `x + 2` on a
 * half tensor adds a half-precision 2 with no CAST node; anything else is CAST. */
static UOp *promote(UOp *t, const DType *out) {
  UOp *b = ubase(t);
  if (uop_is_invalid(b)) return t;
  if (dt_is_weak(t->dtype) && b->op == TG_OP_CONST) return mix_const_like(t, b->arg.c, dt_weak(out));
  return mix_cast(t, out);
}

/* the ALU node itself; checks that the sources broadcast */
static UOp *ralu(TgOp op, UOp *const *src, int n) {
  for (int i = 0; i < n; i++)
    if (!src[i]) return NULL;
  SymShape s, t;
  if (!mix_shape_sym(src[0], &s)) return NULL;
  for (int i = 1; i < n; i++) {
    if (!mix_shape_sym(src[i], &t)) return NULL;
    SymShape prev = s;
    if (!shape_sym_broadcast(&prev, &t, &s)) {
      char b1[200], b2[200];
      return mix_err("shapes %s and %s cannot be broadcast (%s, %s)", shape_sym_fmt(&prev, b1, sizeof b1),
                        shape_sym_fmt(&t, b2, sizeof b2), src[0]->dtype->name, src[i]->dtype->name);
    }
  }
  const DType *dt = uop_derive_dtype(op, src, (size_t)n, NULL);
  if (!dt) {
    if (op == TG_OP_WHERE) return mix_err("where condition must be bool, got %s", src[0]->dtype->name);
    return mix_err("%s is not defined for dtypes %s and %s", uop_op_name(op), src[0]->dtype->name, n > 1 ? src[1]->dtype->name : "-");
  }
  return uop_new(op, dt, src, (size_t)n, arg_none());
}

/* Two already-promoted operands (the composites below promote once and then build several nodes). */
static UOp *ralu2(TgOp op, UOp *a, UOp *b) {
  UOp *s[2] = {a, b};
  return ralu(op, s, 2);
}

UOp *mix_alu1(TgOp op, UOp *a) { return a ? ralu(op, &a, 1) : NULL; }

/* The promotion lattice (dt_least_upper, tinygrad's least_upper_dtype) picks the common dtype; shapes broadcast later,
 * in ralu, because the ALU node itself carries the broadcast shape (no EXPAND is inserted). */
bool mix_broadcasted(UOp **a, UOp **b) {
  if (!*a || !*b) return false;
  const DType *out = dt_least_upper((*a)->dtype, (*b)->dtype);
  *a = promote(*a, out);
  *b = promote(*b, out);
  return *a && *b;
}

UOp *mix_alu(TgOp op, UOp *a, UOp *b) {
  if (!mix_broadcasted(&a, &b)) return NULL;
  return ralu2(op, a, b);
}

UOp *mix_cast(UOp *x, const DType *d) { return x ? uop_cast(x, d) : NULL; }

/* tinygrad bitcast: same-size dtypes reinterpret in place; a different item size rescales the last axis (which must
 * divide evenly) and is refused on symbolic shapes. */
UOp *mix_bitcast(UOp *x, const DType *d) {
  if (!x) return NULL;
  if (dt_is_weak(x->dtype) || dt_is_weak(d) || d == DT_VOID) return mix_err("bitcast requires concrete dtypes, got %s -> %s", x->dtype->name, d->name);
  if (x->dtype == d) return x;
  SymShape ss;
  if (!mix_shape_sym(x, &ss)) return NULL;
  Shape s = ss.max;
  int isz = dt_itemsize(x->dtype), osz = dt_itemsize(d);
  if (isz != osz && shape_sym_is_symbolic(&ss)) /* the scheduler's bitcast of a view needs concrete sizes */
    return mix_err_unsupported("bitcast to another item size of a symbolic shape");
  if (isz != osz) {
    if (s.ndim == 0) return mix_err("bitcast of a 0-d %s to %s changes the size", x->dtype->name, d->name);
    if ((s.d[s.ndim - 1] * isz) % osz) return mix_err("unsupported size in bitcast: %s %s -> %s", mix_fmt_shape(&s), x->dtype->name, d->name);
  }
  return uop_bitcast(x, d);
}

UOp *mix_add(UOp *a, UOp *b) { return mix_alu(TG_OP_ADD, a, b); }
UOp *mix_mul(UOp *a, UOp *b) { return mix_alu(TG_OP_MUL, a, b); }

/* The comparisons and negations are tinygrad's: not x is x != True, -x is x * -1 (logical not for bools), a - b is
 * a + (-b), ge/le/eq are negated lt/gt/ne. The rewrite rules fold these back; the graphs stay tinygrad's. */
UOp *mix_logical_not(UOp *a) { return mix_ne(mix_cast(a, DT_BOOL), uop_const_bool(true)); }

UOp *mix_neg(UOp *a) {
  if (!a) return NULL;
  return a->dtype == DT_BOOL ? mix_logical_not(a) : mix_mul(a, mix_weak_int(-1));
}

UOp *mix_sub(UOp *a, UOp *b) {
  if (!mix_broadcasted(&a, &b)) return NULL;
  return ralu2(TG_OP_ADD, a, mix_neg(b));
}

UOp *mix_reciprocal(UOp *a) { return mix_alu1(TG_OP_RECIPROCAL, a); }
UOp *mix_trunc(UOp *a) { return mix_alu1(TG_OP_TRUNC, a); }
UOp *mix_sqrt(UOp *a) { return mix_alu1(TG_OP_SQRT, a); }
UOp *mix_sin(UOp *a) { return mix_alu1(TG_OP_SIN, a); }
UOp *mix_log2(UOp *a) { return mix_alu1(TG_OP_LOG2, a); }
UOp *mix_exp2(UOp *a) { return mix_alu1(TG_OP_EXP2, a); }
UOp *mix_detach(UOp *a) { return mix_alu1(TG_OP_DETACH, a); }

/* tinygrad div: ints with a rounding mode stay integer (CDIV truncates, FLOORDIV floors); everything else is
 * a * reciprocal(b) in a float (ints promote to the default float), then truncated or floored as asked. */
UOp *mix_div(UOp *a, UOp *b, tg_rounding mode) {
  if (!mix_broadcasted(&a, &b)) return NULL;
  if (dt_is_int(a->dtype) && dt_is_int(b->dtype)) {
    if (mode == TG_ROUND_TRUNC) return ralu2(TG_OP_CDIV, a, b);
    if (mode == TG_ROUND_FLOOR) return ralu2(TG_OP_FLOORDIV, a, b);
  }
  if (dt_is_int(a->dtype) || a->dtype == DT_BOOL) a = mix_cast(a, dt_default_float());
  UOp *d = ralu2(TG_OP_MUL, a, mix_reciprocal(b));
  switch (mode) {
  case TG_ROUND_NONE: return d;
  case TG_ROUND_TRUNC: return mix_trunc(d);
  case TG_ROUND_FLOOR: return mix_floor(d);
  }
  return mix_err("rounding_mode=%d is not supported", (int)mode);
}

/* Python's % (sign of the divisor) and C's fmod (sign of the dividend): the int forms are single ops, the float forms
 * a - b * div(a, b) with the matching rounding. */
UOp *mix_mod(UOp *a, UOp *b) {
  if (!mix_broadcasted(&a, &b)) return NULL;
  if (dt_is_int(a->dtype) && dt_is_int(b->dtype)) return ralu2(TG_OP_FLOORMOD, a, b);
  return mix_sub(a, mix_mul(mix_div(a, b, TG_ROUND_FLOOR), b));
}

UOp *mix_fmod(UOp *a, UOp *b) {
  if (!mix_broadcasted(&a, &b)) return NULL;
  if (dt_is_int(a->dtype) && dt_is_int(b->dtype)) return ralu2(TG_OP_CMOD, a, b);
  return mix_sub(a, mix_mul(mix_div(a, b, TG_ROUND_TRUNC), b));
}

/* Only CMPLT and CMPNE exist as ops; the other comparisons are built from them. */
UOp *mix_lt(UOp *a, UOp *b) { return mix_alu(TG_OP_CMPLT, a, b); }
UOp *mix_gt(UOp *a, UOp *b) { return mix_alu(TG_OP_CMPLT, b, a); }
UOp *mix_ge(UOp *a, UOp *b) { return mix_logical_not(mix_lt(a, b)); }
UOp *mix_le(UOp *a, UOp *b) { return mix_logical_not(mix_gt(a, b)); }
UOp *mix_ne(UOp *a, UOp *b) { return mix_alu(TG_OP_CMPNE, a, b); }
UOp *mix_eq(UOp *a, UOp *b) { return mix_logical_not(mix_ne(a, b)); }

/* dtype.max of an unsigned dtype as tinygrad's Python int; uint64's 2^64-1 does not fit a weak CONST here (weakint
 * holds int64), so it is a uint64 CONST with the same bits: the one place the graph differs from tinygrad's */
static UOp *unsigned_max(const DType *d) {
  return d == DT_UINT64 ? uop_const(DT_UINT64, const_int(-1)) : mix_weak_int((int64_t)dt_max_int(d));
}

UOp *mix_bitwise_not(UOp *a) {
  if (!a) return NULL;
  if (a->dtype == DT_BOOL) return mix_logical_not(a);
  if (!dt_is_int(a->dtype)) return mix_err("bitwise_not is not defined for %s", a->dtype->name);
  if (dt_is_unsigned(a->dtype)) return mix_alu(TG_OP_XOR, a, unsigned_max(a->dtype));
  return mix_alu(TG_OP_XOR, a, mix_weak_int(-1));
}

UOp *mix_where(UOp *c, UOp *x, UOp *y) {
  if (!c || !mix_broadcasted(&x, &y)) return NULL;
  UOp *s[3] = {c, x, y};
  return ralu(TG_OP_WHERE, s, 3);
}

UOp *mix_maximum(UOp *a, UOp *b) { return mix_alu(TG_OP_MAX, a, b); }

/* tinygrad minimum: -max(-a, -b) for floats; for ints and bools, where negation overflows or is not defined,
 * ~max(~a, ~b) through XOR with all ones. */
UOp *mix_minimum(UOp *a, UOp *b) {
  if (!mix_broadcasted(&a, &b)) return NULL;
  const DType *dt = dt_least_upper(a->dtype, b->dtype);
  if (dt_is_float(dt)) return mix_neg(ralu2(TG_OP_MAX, mix_neg(a), mix_neg(b)));
  UOp *k;
  if (dt == DT_BOOL) k = uop_const_bool(true);
  else if (dt_is_unsigned(dt)) k = unsigned_max(dt);
  else k = mix_weak_int(-1);
  UOp *k2 = k; /* each use is a fresh python scalar: same interned CONST */
  return mix_alu(TG_OP_XOR, ralu2(TG_OP_MAX, mix_alu(TG_OP_XOR, a, k), mix_alu(TG_OP_XOR, b, k2)), k);
}

/* The order-reversing map cummin/argmin use: negation for floats, bitwise not for ints. */
UOp *mix_inverse(UOp *a) {
  if (!a) return NULL;
  return dt_is_float(a->dtype) ? mix_neg(a) : mix_bitwise_not(a);
}

/* cos and exp as tinygrad writes them: computed in at least float32 (half inputs upcast) and cast back; cos is
 * sin(pi/2 - x), exp is exp2(x / ln 2), so only SIN and EXP2 need kernels (the renderers' decompositions). */
UOp *mix_cos(UOp *a) {
  if (!a) return NULL;
  a = mix_cast(a, dt_least_upper_float(a->dtype));
  UOp *x = mix_cast(a, dt_least_upper(a->dtype, DT_FLOAT32));
  return mix_cast(mix_sin(mix_sub(mix_weak_float(M_PI / 2), x)), a->dtype);
}

UOp *mix_exp(UOp *a) {
  if (!a) return NULL;
  a = mix_cast(a, dt_least_upper_float(a->dtype));
  UOp *x = mix_cast(a, dt_least_upper(a->dtype, DT_FLOAT32));
  return mix_cast(mix_exp2(mix_mul(x, mix_weak_float(1 / M_LN2))), a->dtype);
}

UOp *mix_log(UOp *a) { return mix_mul(mix_log2(a), mix_weak_float(M_LN2)); }

UOp *mix_pow(UOp *a, UOp *b) {
  if (!mix_broadcasted(&a, &b)) return NULL;
  return ralu2(TG_OP_POW, a, b);
}

UOp *mix_square(UOp *a) { return mix_mul(a, a); }

/* clamp (tinygrad's clip): where(x < lo, lo, x), then where(x > hi, hi, x); either bound may be NULL (none). */
UOp *mix_clamp(UOp *a, UOp *lo, UOp *hi) {
  if (!a) return NULL;
  if (!lo && !hi) return mix_err("at least one of min and max must be given");
  UOp *ret = lo ? mix_where(mix_lt(a, lo), lo, a) : a;
  return hi ? mix_where(mix_gt(ret, hi), hi, ret) : ret;
}

UOp *mix_isnan(UOp *a) { return mix_ne(a, a); }

/* isinf: (x == inf) + (x == -inf) on bools, i.e. an OR (tinygrad's form); isnan above is x != x. */
UOp *mix_isinf(UOp *a) {
  UOp *pos = mix_mul(mix_eq(a, mix_weak_float(INFINITY)), uop_const_bool(true));
  UOp *neg = mix_mul(mix_eq(a, mix_weak_float(-INFINITY)), uop_const_bool(true));
  return mix_add(pos, neg);
}

UOp *mix_ceil(UOp *a) {
  UOp *b = mix_trunc(a);
  return mix_where(mix_gt(a, b), mix_add(b, mix_weak_int(1)), b);
}

UOp *mix_floor(UOp *a) {
  UOp *b = mix_trunc(a);
  return mix_where(mix_lt(a, b), mix_sub(b, mix_weak_int(1)), b);
}

/* Half to even (tinygrad's round): trunc(a)/2 decides whether the truncation is even, then the nearer neighbour. */
UOp *mix_round(UOp *a) {
  UOp *b = mix_div(mix_trunc(a), mix_weak_float(2.0), TG_ROUND_NONE);
  UOp *cond = mix_eq(mix_gt(a, mix_weak_int(0)), mix_eq(mix_trunc(b), b));
  return mix_where(cond, mix_ceil(mix_sub(a, mix_weak_float(0.5))), mix_floor(mix_add(a, mix_weak_float(0.5))));
}

UOp *mix_sign(UOp *a) {
  UOp *inner = mix_where(mix_lt(a, mix_weak_int(0)), mix_const_like(a, const_int(-1), NULL), mix_const_like(a, const_int(1), NULL));
  return mix_where(mix_ne(a, mix_weak_int(0)), inner, mix_const_like(a, const_int(0), NULL));
}

UOp *mix_abs(UOp *a) { return mix_mul(a, mix_sign(a)); }
UOp *mix_relu(UOp *a) { return mix_where(mix_gt(a, mix_weak_int(0)), a, mix_weak_int(0)); }
UOp *mix_sigmoid(UOp *a) { return mix_reciprocal(mix_add(mix_weak_int(1), mix_exp2(mix_mul(a, mix_weak_float(-1 / M_LN2))))); }
UOp *mix_tanh(UOp *a) { return mix_sub(mix_mul(mix_weak_float(2.0), mix_sigmoid(mix_mul(mix_weak_float(2.0), a))), mix_weak_float(1.0)); }

UOp *mix_logaddexp(UOp *a, UOp *b) {
  if (!mix_broadcasted(&a, &b)) return NULL;
  UOp *m = mix_maximum(a, b);
  return mix_add(mix_log(mix_add(mix_exp(mix_sub(a, m)), mix_exp(mix_sub(b, m)))), m);
}

UOp *mix_softplus(UOp *a, double beta) { return mix_mul(mix_weak_float(1 / beta), mix_logaddexp(mix_mul(a, mix_weak_float(beta)), mix_weak_float(0.0))); }

/* Horner's rule with weak float coefficients (they take x's dtype). */
UOp *mix_poly(UOp *x, const double *p, int n) {
  UOp *acc = mix_weak_float(0.0);
  for (int i = 0; i < n; i++) acc = mix_add(mix_mul(acc, x), mix_weak_float(p[i]));
  return acc;
}

UOp *mix_erf(UOp *a) {
  static const double coef[] = {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592};
  UOp *t = mix_div(mix_weak_float(1.0), mix_add(mix_weak_float(1.0), mix_mul(mix_weak_float(0.3275911), mix_abs(a))), TG_ROUND_NONE);
  UOp *inner = mix_mul(mix_mul(t, mix_poly(t, coef, 5)), mix_exp(mix_neg(mix_square(a))));
  return mix_mul(mix_sign(a), mix_sub(mix_weak_float(1.0), inner));
}

UOp *mix_relu6(UOp *a) { return mix_sub(mix_relu(a), mix_relu(mix_sub(a, mix_weak_int(6)))); }
