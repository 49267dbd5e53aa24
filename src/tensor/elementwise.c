/* elementwise.c — tinygrad's ElementwiseMixin: dtype promotion of binary operands (_broadcasted: a bare weak CONST stays
 * weak at the promoted kind, everything else is CASTed), broadcasting left to the ALU's shape, and every composite
 * (neg = x*-1, sub = a + -b, div = a * 1/b, exp = exp2(x*1/ln2), activations ...) built from the same UOps in the
 * same order as tinygrad, so the graphs compare equal. */
#include "tensor/tensor.h"

#include <math.h>

static UOp *ubase(UOp *u) {
  while (u && (op_has(uop_op(u), OPP_MOVEMENT) || u->op == TG_OP_DETACH || u->op == TG_OP_CUSTOM_GRAD)) u = u->src[0];
  return u;
}

static UOp *promote(UOp *t, const DType *out) {
  UOp *b = ubase(t);
  if (uop_is_invalid(b)) return t;
  if (dt_is_weak(t->dtype) && b->op == TG_OP_CONST) return t_const_like(t, b->arg.c, dt_weak(out));
  return t_cast(t, out);
}

/* the ALU node itself; checks that the sources broadcast */
static UOp *ralu(TgOp op, UOp *const *src, int n) {
  for (int i = 0; i < n; i++)
    if (!src[i]) return NULL;
  Shape s, t;
  if (!tshape(src[0], &s)) return NULL;
  for (int i = 1; i < n; i++) {
    if (!tshape(src[i], &t)) return NULL;
    Shape prev = s;
    if (!shape_broadcast(&prev, &t, &s))
      return terr("shapes %s and %s cannot be broadcast (%s, %s)", fmt_shape(&prev), fmt_shape(&t), src[0]->dtype->name,
                  src[i]->dtype->name);
  }
  const DType *dt = uop_derive_dtype(op, src, (size_t)n, NULL);
  if (!dt) {
    if (op == TG_OP_WHERE) return terr("where condition must be bool, got %s", src[0]->dtype->name);
    return terr("%s is not defined for dtypes %s and %s", op_name(op), src[0]->dtype->name, n > 1 ? src[1]->dtype->name : "-");
  }
  return uop_new(op, dt, src, (size_t)n, arg_none());
}

static UOp *ralu2(TgOp op, UOp *a, UOp *b) {
  UOp *s[2] = {a, b};
  return ralu(op, s, 2);
}

UOp *t_alu1(TgOp op, UOp *a) { return a ? ralu(op, &a, 1) : NULL; }

static bool broadcasted(UOp **a, UOp **b) {
  if (!*a || !*b) return false;
  const DType *out = dt_least_upper((*a)->dtype, (*b)->dtype);
  *a = promote(*a, out);
  *b = promote(*b, out);
  return *a && *b;
}

UOp *t_alu(TgOp op, UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  return ralu2(op, a, b);
}

UOp *t_cast(UOp *x, const DType *d) { return x ? uop_cast(x, d) : NULL; }

UOp *t_bitcast(UOp *x, const DType *d) {
  if (!x) return NULL;
  if (dt_is_weak(x->dtype) || dt_is_weak(d) || d == DT_VOID) return terr("bitcast requires concrete dtypes, got %s -> %s", x->dtype->name, d->name);
  if (x->dtype == d) return x;
  Shape s;
  if (!tshape(x, &s)) return NULL;
  int isz = dt_itemsize(x->dtype), osz = dt_itemsize(d);
  if (isz != osz) {
    if (s.ndim == 0) return terr("bitcast of a 0-d %s to %s changes the size", x->dtype->name, d->name);
    if ((s.d[s.ndim - 1] * isz) % osz) return terr("unsupported size in bitcast: %s %s -> %s", fmt_shape(&s), x->dtype->name, d->name);
  }
  return uop_bitcast(x, d);
}

UOp *t_add(UOp *a, UOp *b) { return t_alu(TG_OP_ADD, a, b); }
UOp *t_mul(UOp *a, UOp *b) { return t_alu(TG_OP_MUL, a, b); }

UOp *t_logical_not(UOp *a) { return t_ne(t_cast(a, DT_BOOL), uop_const_bool(true)); }

UOp *t_neg(UOp *a) {
  if (!a) return NULL;
  return a->dtype == DT_BOOL ? t_logical_not(a) : t_mul(a, wi(-1));
}

UOp *t_sub(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  return ralu2(TG_OP_ADD, a, t_neg(b));
}

UOp *t_reciprocal(UOp *a) { return t_alu1(TG_OP_RECIPROCAL, a); }
UOp *t_trunc(UOp *a) { return t_alu1(TG_OP_TRUNC, a); }
UOp *t_sqrt(UOp *a) { return t_alu1(TG_OP_SQRT, a); }
UOp *t_sin(UOp *a) { return t_alu1(TG_OP_SIN, a); }
UOp *t_log2(UOp *a) { return t_alu1(TG_OP_LOG2, a); }
UOp *t_exp2(UOp *a) { return t_alu1(TG_OP_EXP2, a); }
UOp *t_detach(UOp *a) { return t_alu1(TG_OP_DETACH, a); }

UOp *t_div(UOp *a, UOp *b, tg_rounding mode) {
  if (!broadcasted(&a, &b)) return NULL;
  if (dt_is_int(a->dtype) && dt_is_int(b->dtype)) {
    if (mode == TG_ROUND_TRUNC) return ralu2(TG_OP_CDIV, a, b);
    if (mode == TG_ROUND_FLOOR) return ralu2(TG_OP_FLOORDIV, a, b);
  }
  if (dt_is_int(a->dtype) || a->dtype == DT_BOOL) a = t_cast(a, dt_default_float());
  UOp *d = ralu2(TG_OP_MUL, a, t_reciprocal(b));
  switch (mode) {
  case TG_ROUND_NONE: return d;
  case TG_ROUND_TRUNC: return t_trunc(d);
  case TG_ROUND_FLOOR: return t_floor(d);
  }
  return terr("rounding_mode=%d is not supported", (int)mode);
}

UOp *t_mod(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  if (dt_is_int(a->dtype) && dt_is_int(b->dtype)) return ralu2(TG_OP_FLOORMOD, a, b);
  return t_sub(a, t_mul(t_div(a, b, TG_ROUND_FLOOR), b));
}

UOp *t_fmod(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  if (dt_is_int(a->dtype) && dt_is_int(b->dtype)) return ralu2(TG_OP_CMOD, a, b);
  return t_sub(a, t_mul(t_div(a, b, TG_ROUND_TRUNC), b));
}

UOp *t_lt(UOp *a, UOp *b) { return t_alu(TG_OP_CMPLT, a, b); }
UOp *t_gt(UOp *a, UOp *b) { return t_alu(TG_OP_CMPLT, b, a); }
UOp *t_ge(UOp *a, UOp *b) { return t_logical_not(t_lt(a, b)); }
UOp *t_le(UOp *a, UOp *b) { return t_logical_not(t_gt(a, b)); }
UOp *t_ne(UOp *a, UOp *b) { return t_alu(TG_OP_CMPNE, a, b); }
UOp *t_eq(UOp *a, UOp *b) { return t_logical_not(t_ne(a, b)); }

/* dtype.max of an unsigned dtype as tinygrad's Python int; uint64's 2^64-1 does not fit a weak CONST here (weakint
 * holds int64), so it is a uint64 CONST with the same bits: the one place the graph differs from tinygrad's */
static UOp *unsigned_max(const DType *d) {
  return d == DT_UINT64 ? uop_const(DT_UINT64, const_int(-1)) : wi((int64_t)dt_max_int(d));
}

UOp *t_bitwise_not(UOp *a) {
  if (!a) return NULL;
  if (a->dtype == DT_BOOL) return t_logical_not(a);
  if (!dt_is_int(a->dtype)) return terr("bitwise_not is not defined for %s", a->dtype->name);
  if (dt_is_unsigned(a->dtype)) return t_alu(TG_OP_XOR, a, unsigned_max(a->dtype));
  return t_alu(TG_OP_XOR, a, wi(-1));
}

UOp *t_where(UOp *c, UOp *x, UOp *y) {
  if (!c || !broadcasted(&x, &y)) return NULL;
  UOp *s[3] = {c, x, y};
  return ralu(TG_OP_WHERE, s, 3);
}

UOp *t_maximum(UOp *a, UOp *b) { return t_alu(TG_OP_MAX, a, b); }

UOp *t_minimum(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  const DType *dt = dt_least_upper(a->dtype, b->dtype);
  if (dt_is_float(dt)) return t_neg(ralu2(TG_OP_MAX, t_neg(a), t_neg(b)));
  UOp *k;
  if (dt == DT_BOOL) k = uop_const_bool(true);
  else if (dt_is_unsigned(dt)) k = unsigned_max(dt);
  else k = wi(-1);
  UOp *k2 = k; /* each use is a fresh python scalar: same interned CONST */
  return t_alu(TG_OP_XOR, ralu2(TG_OP_MAX, t_alu(TG_OP_XOR, a, k), t_alu(TG_OP_XOR, b, k2)), k);
}

UOp *t_inverse(UOp *a) {
  if (!a) return NULL;
  return dt_is_float(a->dtype) ? t_neg(a) : t_bitwise_not(a);
}

UOp *t_cos(UOp *a) {
  if (!a) return NULL;
  a = t_cast(a, dt_least_upper_float(a->dtype));
  UOp *x = t_cast(a, dt_least_upper(a->dtype, DT_FLOAT32));
  return t_cast(t_sin(t_sub(wf(M_PI / 2), x)), a->dtype);
}

UOp *t_exp(UOp *a) {
  if (!a) return NULL;
  a = t_cast(a, dt_least_upper_float(a->dtype));
  UOp *x = t_cast(a, dt_least_upper(a->dtype, DT_FLOAT32));
  return t_cast(t_exp2(t_mul(x, wf(1 / M_LN2))), a->dtype);
}

UOp *t_log(UOp *a) { return t_mul(t_log2(a), wf(M_LN2)); }

UOp *t_pow(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  return ralu2(TG_OP_POW, a, b);
}

UOp *t_square(UOp *a) { return t_mul(a, a); }

UOp *t_clamp(UOp *a, UOp *lo, UOp *hi) {
  if (!a) return NULL;
  if (!lo && !hi) return terr("at least one of min and max must be given");
  UOp *ret = lo ? t_where(t_lt(a, lo), lo, a) : a;
  return hi ? t_where(t_gt(ret, hi), hi, ret) : ret;
}

UOp *t_isnan(UOp *a) { return t_ne(a, a); }

UOp *t_isinf(UOp *a) {
  UOp *pos = t_mul(t_eq(a, wf(INFINITY)), uop_const_bool(true));
  UOp *neg = t_mul(t_eq(a, wf(-INFINITY)), uop_const_bool(true));
  return t_add(pos, neg);
}

UOp *t_ceil(UOp *a) {
  UOp *b = t_trunc(a);
  return t_where(t_gt(a, b), t_add(b, wi(1)), b);
}

UOp *t_floor(UOp *a) {
  UOp *b = t_trunc(a);
  return t_where(t_lt(a, b), t_sub(b, wi(1)), b);
}

static UOp *t_round(UOp *a) {
  UOp *b = t_div(t_trunc(a), wf(2.0), TG_ROUND_NONE);
  UOp *cond = t_eq(t_gt(a, wi(0)), t_eq(t_trunc(b), b));
  return t_where(cond, t_ceil(t_sub(a, wf(0.5))), t_floor(t_add(a, wf(0.5))));
}

UOp *t_sign(UOp *a) {
  UOp *inner = t_where(t_lt(a, wi(0)), t_const_like(a, const_int(-1), NULL), t_const_like(a, const_int(1), NULL));
  return t_where(t_ne(a, wi(0)), inner, t_const_like(a, const_int(0), NULL));
}

UOp *t_abs(UOp *a) { return t_mul(a, t_sign(a)); }
UOp *t_relu(UOp *a) { return t_where(t_gt(a, wi(0)), a, wi(0)); }
UOp *t_sigmoid(UOp *a) { return t_reciprocal(t_add(wi(1), t_exp2(t_mul(a, wf(-1 / M_LN2))))); }
UOp *t_tanh(UOp *a) { return t_sub(t_mul(wf(2.0), t_sigmoid(t_mul(wf(2.0), a))), wf(1.0)); }

UOp *t_logaddexp(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  UOp *m = t_maximum(a, b);
  return t_add(t_log(t_add(t_exp(t_sub(a, m)), t_exp(t_sub(b, m)))), m);
}

UOp *t_softplus(UOp *a, double beta) { return t_mul(wf(1 / beta), t_logaddexp(t_mul(a, wf(beta)), wf(0.0))); }

static UOp *poly_n(UOp *x, const double *p, int n) {
  UOp *acc = wf(0.0);
  for (int i = 0; i < n; i++) acc = t_add(t_mul(acc, x), wf(p[i]));
  return acc;
}

static UOp *t_erf(UOp *a) {
  static const double coef[] = {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592};
  UOp *t = t_div(wf(1.0), t_add(wf(1.0), t_mul(wf(0.3275911), t_abs(a))), TG_ROUND_NONE);
  UOp *inner = t_mul(t_mul(t, poly_n(t, coef, 5)), t_exp(t_neg(t_square(a))));
  return t_mul(t_sign(a), t_sub(wf(1.0), inner));
}

static UOp *t_relu6(UOp *a) { return t_sub(t_relu(a), t_relu(t_sub(a, wi(6)))); }

/* a scalar bound as a Python literal: integral values are ints, others floats */
static UOp *pyscalar(double v) { return v == floor(v) && fabs(v) < 9e15 ? wi((int64_t)v) : wf(v); }

/* ------------------------------------------------------------------------------------------------- public API */

typedef UOp *(*Bin)(UOp *, UOp *);
typedef UOp *(*Un)(UOp *);

static tg_tensor *bin(const char *op, Bin f, const tg_tensor *a, const tg_tensor *b) {
  tctx_begin(op);
  UOp *x = tin(a, 1), *y = x ? tin(b, 2) : NULL;
  return tctx_end(x && y ? f(x, y) : NULL);
}

static tg_tensor *un(const char *op, Un f, const tg_tensor *a) {
  tctx_begin(op);
  UOp *x = tin(a, 1);
  return tctx_end(x ? f(x) : NULL);
}

static UOp *f_sub(UOp *a, UOp *b) { return t_sub(a, b); }
static UOp *f_div(UOp *a, UOp *b) { return t_div(a, b, TG_ROUND_NONE); }
static UOp *f_idiv(UOp *a, UOp *b) {
  if (!dt_is_int(a->dtype) || !dt_is_int(b->dtype)) return terr("integer division needs ints, got %s and %s", a->dtype->name, b->dtype->name);
  return t_div(a, b, TG_ROUND_TRUNC);
}
static UOp *int_only(TgOp op, UOp *a, UOp *b, bool bools_ok) {
  bool ok = (dt_is_int(a->dtype) || (bools_ok && a->dtype == DT_BOOL)) && (dt_is_int(b->dtype) || (bools_ok && b->dtype == DT_BOOL));
  if (!ok) return terr("%s needs %s operands, got %s and %s", op_name(op), bools_ok ? "int or bool" : "int", a->dtype->name, b->dtype->name);
  return t_alu(op, a, b);
}
static UOp *f_and(UOp *a, UOp *b) { return int_only(TG_OP_AND, a, b, true); }
static UOp *f_or(UOp *a, UOp *b) { return int_only(TG_OP_OR, a, b, true); }
static UOp *f_xor(UOp *a, UOp *b) { return int_only(TG_OP_XOR, a, b, true); }
static UOp *f_shl(UOp *a, UOp *b) { return int_only(TG_OP_SHL, a, b, false); }
static UOp *f_shr(UOp *a, UOp *b) { return int_only(TG_OP_SHR, a, b, false); }
static UOp *f_max(UOp *a, UOp *b) { return t_maximum(a, b); }
static UOp *f_min(UOp *a, UOp *b) { return t_minimum(a, b); }

tg_tensor *tg_add(const tg_tensor *a, const tg_tensor *b) { return bin("tg_add", t_add, a, b); }
tg_tensor *tg_sub(const tg_tensor *a, const tg_tensor *b) { return bin("tg_sub", f_sub, a, b); }
tg_tensor *tg_mul(const tg_tensor *a, const tg_tensor *b) { return bin("tg_mul", t_mul, a, b); }
tg_tensor *tg_div(const tg_tensor *a, const tg_tensor *b) { return bin("tg_div", f_div, a, b); }
tg_tensor *tg_idiv(const tg_tensor *a, const tg_tensor *b) { return bin("tg_idiv", f_idiv, a, b); }
tg_tensor *tg_mod(const tg_tensor *a, const tg_tensor *b) { return bin("tg_mod", t_mod, a, b); }
tg_tensor *tg_fmod(const tg_tensor *a, const tg_tensor *b) { return bin("tg_fmod", t_fmod, a, b); }
tg_tensor *tg_pow(const tg_tensor *a, const tg_tensor *b) { return bin("tg_pow", t_pow, a, b); }
tg_tensor *tg_maximum(const tg_tensor *a, const tg_tensor *b) { return bin("tg_maximum", f_max, a, b); }
tg_tensor *tg_minimum(const tg_tensor *a, const tg_tensor *b) { return bin("tg_minimum", f_min, a, b); }
tg_tensor *tg_lt(const tg_tensor *a, const tg_tensor *b) { return bin("tg_lt", t_lt, a, b); }
tg_tensor *tg_le(const tg_tensor *a, const tg_tensor *b) { return bin("tg_le", t_le, a, b); }
tg_tensor *tg_gt(const tg_tensor *a, const tg_tensor *b) { return bin("tg_gt", t_gt, a, b); }
tg_tensor *tg_ge(const tg_tensor *a, const tg_tensor *b) { return bin("tg_ge", t_ge, a, b); }
tg_tensor *tg_eq(const tg_tensor *a, const tg_tensor *b) { return bin("tg_eq", t_eq, a, b); }
tg_tensor *tg_ne(const tg_tensor *a, const tg_tensor *b) { return bin("tg_ne", t_ne, a, b); }
tg_tensor *tg_bitwise_and(const tg_tensor *a, const tg_tensor *b) { return bin("tg_bitwise_and", f_and, a, b); }
tg_tensor *tg_bitwise_or(const tg_tensor *a, const tg_tensor *b) { return bin("tg_bitwise_or", f_or, a, b); }
tg_tensor *tg_bitwise_xor(const tg_tensor *a, const tg_tensor *b) { return bin("tg_bitwise_xor", f_xor, a, b); }
tg_tensor *tg_lshift(const tg_tensor *a, const tg_tensor *b) { return bin("tg_lshift", f_shl, a, b); }
tg_tensor *tg_rshift(const tg_tensor *a, const tg_tensor *b) { return bin("tg_rshift", f_shr, a, b); }

tg_tensor *tg_div_mode(const tg_tensor *a, const tg_tensor *b, tg_rounding mode) {
  tctx_begin("tg_div_mode");
  UOp *x = tin(a, 1), *y = x ? tin(b, 2) : NULL, *r = NULL;
  if (x && y) r = (unsigned)mode > TG_ROUND_FLOOR ? terr("rounding mode %d is not supported", (int)mode) : t_div(x, y, mode);
  return tctx_end(r);
}

tg_tensor *tg_where(const tg_tensor *cond, const tg_tensor *x, const tg_tensor *y) {
  tctx_begin("tg_where");
  UOp *c = tin(cond, 1), *a = c ? tin(x, 2) : NULL, *b = a ? tin(y, 3) : NULL;
  return tctx_end(b ? t_where(c, a, b) : NULL);
}

/* unary ops whose domain is float-like (ints promote to float as in tinygrad) */
static UOp *f_bitnot(UOp *a) { return t_bitwise_not(a); }
static UOp *f_round(UOp *a) { return t_round(a); }
static UOp *f_rsqrt(UOp *a) { return t_reciprocal(t_sqrt(a)); }
static UOp *f_tan(UOp *a) { return t_div(t_sin(a), t_cos(a), TG_ROUND_NONE); }
static UOp *f_isfinite(UOp *a) { return t_logical_not(t_alu(TG_OP_OR, t_isinf(a), t_isnan(a))); }
static UOp *f_relu6(UOp *a) { return t_relu6(a); }
static UOp *f_hardsigmoid(UOp *a) {
  UOp *ax = t_add(t_mul(wf(1.0 / 6), a), wf(0.5));
  UOp *ax2 = t_sub(t_add(t_mul(wf(1.0 / 6), a), wf(0.5)), wi(1));
  return t_sub(t_relu(ax), t_relu(ax2));
}
static UOp *f_gelu(UOp *a) {
  UOp *inner = t_mul(wf(sqrt(2 / M_PI)), t_add(a, t_mul(wf(0.044715), t_pow(a, wi(3)))));
  return t_mul(t_mul(wf(0.5), a), t_add(wi(1), t_tanh(inner)));
}
static UOp *f_quick_gelu(UOp *a) { return t_mul(a, t_sigmoid(t_mul(a, wf(1.702)))); }
static UOp *f_swish(UOp *a) { return t_mul(a, t_sigmoid(a)); }
static UOp *f_hardswish(UOp *a) { return t_mul(t_mul(a, t_relu6(t_add(a, wi(3)))), wf(1.0 / 6)); }
static UOp *f_softsign(UOp *a) { return t_div(a, t_add(wi(1), t_abs(a)), TG_ROUND_NONE); }
static UOp *f_mish(UOp *a) { return t_mul(a, t_tanh(t_softplus(a, 1.0))); }
static UOp *f_selu(UOp *a) {
  return t_mul(wf(1.0507), t_where(t_ge(a, wi(0)), a, t_mul(wf(1.67326), t_sub(t_exp(a), wi(1)))));
}
static UOp *f_logsigmoid(UOp *a) { return t_neg(t_softplus(t_neg(a), 1.0)); }
static UOp *f_erf(UOp *a) { return t_erf(a); }
static UOp *f_sinh(UOp *a) { return t_div(t_sub(t_exp(a), t_exp(t_neg(a))), wi(2), TG_ROUND_NONE); }
static UOp *f_cosh(UOp *a) { return t_div(t_add(t_exp(a), t_exp(t_neg(a))), wi(2), TG_ROUND_NONE); }

static UOp *t_asin(UOp *a) {
  static const double coef[] = {-0.0012624911, 0.0066700901, -0.0170881256, 0.0308918810,
                                -0.0501743046, 0.0889789874, -0.2145988016, 1.5707963050};
  UOp *x = t_sub(wf(M_PI / 2), t_mul(t_sqrt(t_sub(wf(1.0), t_abs(a))), poly_n(t_abs(a), coef, 8)));
  return t_mul(t_sign(a), x);
}
static UOp *f_log10(UOp *a) { return t_mul(t_log2(a), wf(log10(2.0))); }
static UOp *f_acos(UOp *a) { return t_sub(wf(M_PI / 2), t_asin(a)); }
static UOp *f_atan(UOp *a) { return t_asin(t_div(a, t_sqrt(t_add(wi(1), t_mul(a, a))), TG_ROUND_NONE)); }
static UOp *f_atanh(UOp *a) {
  return t_div(t_log(t_div(t_add(wi(1), a), t_sub(wi(1), a), TG_ROUND_NONE)), wi(2), TG_ROUND_NONE);
}
static UOp *f_asinh(UOp *a) { return t_log(t_add(a, t_sqrt(t_add(t_square(a), wi(1))))); }
static UOp *f_acosh(UOp *a) { return t_log(t_add(a, t_sqrt(t_sub(t_square(a), wi(1))))); }
static UOp *f_copysign(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  UOp *mag = t_abs(a);
  return t_where(t_alu(TG_OP_OR, t_lt(b, wi(0)), t_lt(t_reciprocal(b), wi(0))), t_neg(mag), mag);
}

tg_tensor *tg_log10(const tg_tensor *a) { return un("tg_log10", f_log10, a); }
tg_tensor *tg_asin(const tg_tensor *a) { return un("tg_asin", t_asin, a); }
tg_tensor *tg_acos(const tg_tensor *a) { return un("tg_acos", f_acos, a); }
tg_tensor *tg_atan(const tg_tensor *a) { return un("tg_atan", f_atan, a); }
tg_tensor *tg_asinh(const tg_tensor *a) { return un("tg_asinh", f_asinh, a); }
tg_tensor *tg_acosh(const tg_tensor *a) { return un("tg_acosh", f_acosh, a); }
tg_tensor *tg_atanh(const tg_tensor *a) { return un("tg_atanh", f_atanh, a); }
tg_tensor *tg_copysign(const tg_tensor *a, const tg_tensor *b) { return bin("tg_copysign", f_copysign, a, b); }
tg_tensor *tg_logaddexp(const tg_tensor *a, const tg_tensor *b) { return bin("tg_logaddexp", t_logaddexp, a, b); }

tg_tensor *tg_masked_fill(const tg_tensor *t, const tg_tensor *mask, const tg_tensor *value) {
  tctx_begin("tg_masked_fill");
  UOp *x = tin(t, 1), *m = x ? tin(mask, 2) : NULL, *v = m ? tin(value, 3) : NULL;
  return tctx_end(v ? t_where(m, v, x) : NULL);
}

/* tinygrad lerp: a + (end - a) * weight; uint8 with a tensor weight interpolates in 7-bit fixed point */
tg_tensor *tg_lerp(const tg_tensor *a, const tg_tensor *end, const tg_tensor *weight) {
  tctx_begin("tg_lerp");
  UOp *x = tin(a, 1), *e = x ? tin(end, 2) : NULL, *w = e ? tin(weight, 3) : NULL, *r = NULL;
  if (w) {
    bool python_scalar = dt_is_weak(w->dtype) && w->op == TG_OP_CONST;
    if (x->dtype == DT_UINT8 && !python_scalar) {
      UOp *w_i = t_cast(t_add(t_mul(w, wi(1 << 7)), wf(0.5)), DT_INT16);
      UOp *d = t_add(t_mul(t_cast(t_sub(e, x), DT_INT8), w_i), wi(1 << 6));
      r = t_cast(t_add(x, t_alu(TG_OP_SHR, t_cast(d, DT_UINT16), wi(7))), DT_UINT8);
    } else r = t_add(x, t_mul(t_sub(e, x), w));
  }
  return tctx_end(r);
}

tg_tensor *tg_neg(const tg_tensor *a) { return un("tg_neg", t_neg, a); }
tg_tensor *tg_abs(const tg_tensor *a) { return un("tg_abs", t_abs, a); }
tg_tensor *tg_sign(const tg_tensor *a) { return un("tg_sign", t_sign, a); }
tg_tensor *tg_exp(const tg_tensor *a) { return un("tg_exp", t_exp, a); }
tg_tensor *tg_exp2(const tg_tensor *a) { return un("tg_exp2", t_exp2, a); }
tg_tensor *tg_log(const tg_tensor *a) { return un("tg_log", t_log, a); }
tg_tensor *tg_log2(const tg_tensor *a) { return un("tg_log2", t_log2, a); }
tg_tensor *tg_sqrt(const tg_tensor *a) { return un("tg_sqrt", t_sqrt, a); }
tg_tensor *tg_rsqrt(const tg_tensor *a) { return un("tg_rsqrt", f_rsqrt, a); }
tg_tensor *tg_reciprocal(const tg_tensor *a) { return un("tg_reciprocal", t_reciprocal, a); }
tg_tensor *tg_square(const tg_tensor *a) { return un("tg_square", t_square, a); }
tg_tensor *tg_sin(const tg_tensor *a) { return un("tg_sin", t_sin, a); }
tg_tensor *tg_cos(const tg_tensor *a) { return un("tg_cos", t_cos, a); }
tg_tensor *tg_tan(const tg_tensor *a) { return un("tg_tan", f_tan, a); }
tg_tensor *tg_trunc(const tg_tensor *a) { return un("tg_trunc", t_trunc, a); }
tg_tensor *tg_floor(const tg_tensor *a) { return un("tg_floor", t_floor, a); }
tg_tensor *tg_ceil(const tg_tensor *a) { return un("tg_ceil", t_ceil, a); }
tg_tensor *tg_round(const tg_tensor *a) { return un("tg_round", f_round, a); }
tg_tensor *tg_isnan(const tg_tensor *a) { return un("tg_isnan", t_isnan, a); }
tg_tensor *tg_isinf(const tg_tensor *a) { return un("tg_isinf", t_isinf, a); }
tg_tensor *tg_isfinite(const tg_tensor *a) { return un("tg_isfinite", f_isfinite, a); }
tg_tensor *tg_bitwise_not(const tg_tensor *a) { return un("tg_bitwise_not", f_bitnot, a); }
tg_tensor *tg_logical_not(const tg_tensor *a) { return un("tg_logical_not", t_logical_not, a); }
tg_tensor *tg_relu(const tg_tensor *a) { return un("tg_relu", t_relu, a); }
tg_tensor *tg_relu6(const tg_tensor *a) { return un("tg_relu6", f_relu6, a); }
tg_tensor *tg_sigmoid(const tg_tensor *a) { return un("tg_sigmoid", t_sigmoid, a); }
tg_tensor *tg_hardsigmoid(const tg_tensor *a) { return un("tg_hardsigmoid", f_hardsigmoid, a); }
tg_tensor *tg_tanh(const tg_tensor *a) { return un("tg_tanh", t_tanh, a); }
tg_tensor *tg_gelu(const tg_tensor *a) { return un("tg_gelu", f_gelu, a); }
tg_tensor *tg_quick_gelu(const tg_tensor *a) { return un("tg_quick_gelu", f_quick_gelu, a); }
tg_tensor *tg_silu(const tg_tensor *a) { return un("tg_silu", f_swish, a); }
tg_tensor *tg_swish(const tg_tensor *a) { return un("tg_swish", f_swish, a); }
tg_tensor *tg_hardswish(const tg_tensor *a) { return un("tg_hardswish", f_hardswish, a); }
tg_tensor *tg_softsign(const tg_tensor *a) { return un("tg_softsign", f_softsign, a); }
tg_tensor *tg_mish(const tg_tensor *a) { return un("tg_mish", f_mish, a); }
tg_tensor *tg_selu(const tg_tensor *a) { return un("tg_selu", f_selu, a); }
tg_tensor *tg_logsigmoid(const tg_tensor *a) { return un("tg_logsigmoid", f_logsigmoid, a); }
tg_tensor *tg_erf(const tg_tensor *a) { return un("tg_erf", f_erf, a); }
tg_tensor *tg_sinh(const tg_tensor *a) { return un("tg_sinh", f_sinh, a); }
tg_tensor *tg_cosh(const tg_tensor *a) { return un("tg_cosh", f_cosh, a); }

tg_tensor *tg_softplus(const tg_tensor *a, double beta) {
  tctx_begin("tg_softplus");
  UOp *x = tin(a, 1), *r = NULL;
  if (x) r = beta == 0 || !isfinite(beta) ? terr("beta must be finite and nonzero, got %g", beta) : t_softplus(x, beta);
  return tctx_end(r);
}

tg_tensor *tg_leaky_relu(const tg_tensor *a, double neg_slope) {
  tctx_begin("tg_leaky_relu");
  UOp *x = tin(a, 1);
  return tctx_end(x ? t_where(t_lt(x, wi(0)), t_mul(pyscalar(neg_slope), x), x) : NULL);
}

tg_tensor *tg_elu(const tg_tensor *a, double alpha) {
  tctx_begin("tg_elu");
  UOp *x = tin(a, 1);
  return tctx_end(x ? t_sub(t_relu(x), t_mul(pyscalar(alpha), t_relu(t_sub(wi(1), t_exp(x))))) : NULL);
}

tg_tensor *tg_celu(const tg_tensor *a, double alpha) {
  tctx_begin("tg_celu");
  UOp *x = tin(a, 1), *r = NULL;
  if (x && alpha == 0) r = terr("alpha must be nonzero");
  else if (x) {
    UOp *al = pyscalar(alpha);
    r = t_add(t_maximum(x, wi(0)), t_minimum(t_mul(al, t_sub(t_exp(t_div(x, al, TG_ROUND_NONE)), wi(1))), wi(0)));
  }
  return tctx_end(r);
}

tg_tensor *tg_hardtanh(const tg_tensor *a, double min_val, double max_val) {
  tctx_begin("tg_hardtanh");
  UOp *x = tin(a, 1);
  return tctx_end(x ? t_clamp(x, pyscalar(min_val), pyscalar(max_val)) : NULL);
}

tg_tensor *tg_clamp(const tg_tensor *a, double min, double max) {
  tctx_begin("tg_clamp");
  UOp *x = tin(a, 1);
  return tctx_end(x ? t_clamp(x, isnan(min) ? NULL : pyscalar(min), isnan(max) ? NULL : pyscalar(max)) : NULL);
}

static const DType *public_dtype(tg_dtype d) {
  if ((unsigned)d >= TG_DTYPE_COUNT || d == TG_VOID) {
    terr("invalid dtype %d", (int)d);
    return NULL;
  }
  return &tg_dtype_table[d];
}

tg_tensor *tg_cast(const tg_tensor *a, tg_dtype dtype) {
  tctx_begin("tg_cast");
  UOp *x = tin(a, 1);
  const DType *d = x ? public_dtype(dtype) : NULL;
  return tctx_end(d ? t_cast(x, d) : NULL);
}

tg_tensor *tg_bitcast(const tg_tensor *a, tg_dtype dtype) {
  tctx_begin("tg_bitcast");
  UOp *x = tin(a, 1);
  const DType *d = x ? public_dtype(dtype) : NULL;
  return tctx_end(d ? t_bitcast(x, d) : NULL);
}
