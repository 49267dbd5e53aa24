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
  if (dt_is_weak(t->dtype) && b->op == TG_OP_CONST) return tensor_const_like(t, b->arg.c, dt_weak(out));
  return tensor_cast(t, out);
}

/* the ALU node itself; checks that the sources broadcast */
static UOp *ralu(TgOp op, UOp *const *src, int n) {
  for (int i = 0; i < n; i++)
    if (!src[i]) return NULL;
  SymShape s, t;
  if (!tensor_shape_sym(src[0], &s)) return NULL;
  for (int i = 1; i < n; i++) {
    if (!tensor_shape_sym(src[i], &t)) return NULL;
    SymShape prev = s;
    if (!shape_sym_broadcast(&prev, &t, &s)) {
      char b1[200], b2[200];
      return tensor_err("shapes %s and %s cannot be broadcast (%s, %s)", shape_sym_fmt(&prev, b1, sizeof b1),
                        shape_sym_fmt(&t, b2, sizeof b2), src[0]->dtype->name, src[i]->dtype->name);
    }
  }
  const DType *dt = uop_derive_dtype(op, src, (size_t)n, NULL);
  if (!dt) {
    if (op == TG_OP_WHERE) return tensor_err("where condition must be bool, got %s", src[0]->dtype->name);
    return tensor_err("%s is not defined for dtypes %s and %s", uop_op_name(op), src[0]->dtype->name, n > 1 ? src[1]->dtype->name : "-");
  }
  return uop_new(op, dt, src, (size_t)n, arg_none());
}

static UOp *ralu2(TgOp op, UOp *a, UOp *b) {
  UOp *s[2] = {a, b};
  return ralu(op, s, 2);
}

UOp *tensor_alu1(TgOp op, UOp *a) { return a ? ralu(op, &a, 1) : NULL; }

static bool broadcasted(UOp **a, UOp **b) {
  if (!*a || !*b) return false;
  const DType *out = dt_least_upper((*a)->dtype, (*b)->dtype);
  *a = promote(*a, out);
  *b = promote(*b, out);
  return *a && *b;
}

UOp *tensor_alu(TgOp op, UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  return ralu2(op, a, b);
}

UOp *tensor_cast(UOp *x, const DType *d) { return x ? uop_cast(x, d) : NULL; }

UOp *tensor_bitcast(UOp *x, const DType *d) {
  if (!x) return NULL;
  if (dt_is_weak(x->dtype) || dt_is_weak(d) || d == DT_VOID) return tensor_err("bitcast requires concrete dtypes, got %s -> %s", x->dtype->name, d->name);
  if (x->dtype == d) return x;
  SymShape ss;
  if (!tensor_shape_sym(x, &ss)) return NULL;
  Shape s = ss.max;
  int isz = dt_itemsize(x->dtype), osz = dt_itemsize(d);
  if (isz != osz && shape_sym_is_symbolic(&ss)) /* the scheduler's bitcast of a view needs concrete sizes */
    return tensor_err_unsupported("bitcast to another item size of a symbolic shape");
  if (isz != osz) {
    if (s.ndim == 0) return tensor_err("bitcast of a 0-d %s to %s changes the size", x->dtype->name, d->name);
    if ((s.d[s.ndim - 1] * isz) % osz) return tensor_err("unsupported size in bitcast: %s %s -> %s", tensor_fmt_shape(&s), x->dtype->name, d->name);
  }
  return uop_bitcast(x, d);
}

UOp *tensor_add(UOp *a, UOp *b) { return tensor_alu(TG_OP_ADD, a, b); }
UOp *tensor_mul(UOp *a, UOp *b) { return tensor_alu(TG_OP_MUL, a, b); }

UOp *tensor_logical_not(UOp *a) { return tensor_ne(tensor_cast(a, DT_BOOL), uop_const_bool(true)); }

UOp *tensor_neg(UOp *a) {
  if (!a) return NULL;
  return a->dtype == DT_BOOL ? tensor_logical_not(a) : tensor_mul(a, tensor_weak_int(-1));
}

UOp *tensor_sub(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  return ralu2(TG_OP_ADD, a, tensor_neg(b));
}

UOp *tensor_reciprocal(UOp *a) { return tensor_alu1(TG_OP_RECIPROCAL, a); }
UOp *tensor_trunc(UOp *a) { return tensor_alu1(TG_OP_TRUNC, a); }
UOp *tensor_sqrt(UOp *a) { return tensor_alu1(TG_OP_SQRT, a); }
UOp *tensor_sin(UOp *a) { return tensor_alu1(TG_OP_SIN, a); }
UOp *tensor_log2(UOp *a) { return tensor_alu1(TG_OP_LOG2, a); }
UOp *tensor_exp2(UOp *a) { return tensor_alu1(TG_OP_EXP2, a); }
UOp *tensor_detach(UOp *a) { return tensor_alu1(TG_OP_DETACH, a); }

UOp *tensor_div(UOp *a, UOp *b, tg_rounding mode) {
  if (!broadcasted(&a, &b)) return NULL;
  if (dt_is_int(a->dtype) && dt_is_int(b->dtype)) {
    if (mode == TG_ROUND_TRUNC) return ralu2(TG_OP_CDIV, a, b);
    if (mode == TG_ROUND_FLOOR) return ralu2(TG_OP_FLOORDIV, a, b);
  }
  if (dt_is_int(a->dtype) || a->dtype == DT_BOOL) a = tensor_cast(a, dt_default_float());
  UOp *d = ralu2(TG_OP_MUL, a, tensor_reciprocal(b));
  switch (mode) {
  case TG_ROUND_NONE: return d;
  case TG_ROUND_TRUNC: return tensor_trunc(d);
  case TG_ROUND_FLOOR: return tensor_floor(d);
  }
  return tensor_err("rounding_mode=%d is not supported", (int)mode);
}

UOp *tensor_mod(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  if (dt_is_int(a->dtype) && dt_is_int(b->dtype)) return ralu2(TG_OP_FLOORMOD, a, b);
  return tensor_sub(a, tensor_mul(tensor_div(a, b, TG_ROUND_FLOOR), b));
}

UOp *tensor_fmod(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  if (dt_is_int(a->dtype) && dt_is_int(b->dtype)) return ralu2(TG_OP_CMOD, a, b);
  return tensor_sub(a, tensor_mul(tensor_div(a, b, TG_ROUND_TRUNC), b));
}

UOp *tensor_lt(UOp *a, UOp *b) { return tensor_alu(TG_OP_CMPLT, a, b); }
UOp *tensor_gt(UOp *a, UOp *b) { return tensor_alu(TG_OP_CMPLT, b, a); }
UOp *tensor_ge(UOp *a, UOp *b) { return tensor_logical_not(tensor_lt(a, b)); }
UOp *tensor_le(UOp *a, UOp *b) { return tensor_logical_not(tensor_gt(a, b)); }
UOp *tensor_ne(UOp *a, UOp *b) { return tensor_alu(TG_OP_CMPNE, a, b); }
UOp *tensor_eq(UOp *a, UOp *b) { return tensor_logical_not(tensor_ne(a, b)); }

/* dtype.max of an unsigned dtype as tinygrad's Python int; uint64's 2^64-1 does not fit a weak CONST here (weakint
 * holds int64), so it is a uint64 CONST with the same bits: the one place the graph differs from tinygrad's */
static UOp *unsigned_max(const DType *d) {
  return d == DT_UINT64 ? uop_const(DT_UINT64, const_int(-1)) : tensor_weak_int((int64_t)dt_max_int(d));
}

UOp *tensor_bitwise_not(UOp *a) {
  if (!a) return NULL;
  if (a->dtype == DT_BOOL) return tensor_logical_not(a);
  if (!dt_is_int(a->dtype)) return tensor_err("bitwise_not is not defined for %s", a->dtype->name);
  if (dt_is_unsigned(a->dtype)) return tensor_alu(TG_OP_XOR, a, unsigned_max(a->dtype));
  return tensor_alu(TG_OP_XOR, a, tensor_weak_int(-1));
}

UOp *tensor_where(UOp *c, UOp *x, UOp *y) {
  if (!c || !broadcasted(&x, &y)) return NULL;
  UOp *s[3] = {c, x, y};
  return ralu(TG_OP_WHERE, s, 3);
}

UOp *tensor_maximum(UOp *a, UOp *b) { return tensor_alu(TG_OP_MAX, a, b); }

UOp *tensor_minimum(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  const DType *dt = dt_least_upper(a->dtype, b->dtype);
  if (dt_is_float(dt)) return tensor_neg(ralu2(TG_OP_MAX, tensor_neg(a), tensor_neg(b)));
  UOp *k;
  if (dt == DT_BOOL) k = uop_const_bool(true);
  else if (dt_is_unsigned(dt)) k = unsigned_max(dt);
  else k = tensor_weak_int(-1);
  UOp *k2 = k; /* each use is a fresh python scalar: same interned CONST */
  return tensor_alu(TG_OP_XOR, ralu2(TG_OP_MAX, tensor_alu(TG_OP_XOR, a, k), tensor_alu(TG_OP_XOR, b, k2)), k);
}

UOp *tensor_inverse(UOp *a) {
  if (!a) return NULL;
  return dt_is_float(a->dtype) ? tensor_neg(a) : tensor_bitwise_not(a);
}

UOp *tensor_cos(UOp *a) {
  if (!a) return NULL;
  a = tensor_cast(a, dt_least_upper_float(a->dtype));
  UOp *x = tensor_cast(a, dt_least_upper(a->dtype, DT_FLOAT32));
  return tensor_cast(tensor_sin(tensor_sub(tensor_weak_float(M_PI / 2), x)), a->dtype);
}

UOp *tensor_exp(UOp *a) {
  if (!a) return NULL;
  a = tensor_cast(a, dt_least_upper_float(a->dtype));
  UOp *x = tensor_cast(a, dt_least_upper(a->dtype, DT_FLOAT32));
  return tensor_cast(tensor_exp2(tensor_mul(x, tensor_weak_float(1 / M_LN2))), a->dtype);
}

UOp *tensor_log(UOp *a) { return tensor_mul(tensor_log2(a), tensor_weak_float(M_LN2)); }

UOp *tensor_pow(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  return ralu2(TG_OP_POW, a, b);
}

UOp *tensor_square(UOp *a) { return tensor_mul(a, a); }

UOp *tensor_clamp(UOp *a, UOp *lo, UOp *hi) {
  if (!a) return NULL;
  if (!lo && !hi) return tensor_err("at least one of min and max must be given");
  UOp *ret = lo ? tensor_where(tensor_lt(a, lo), lo, a) : a;
  return hi ? tensor_where(tensor_gt(ret, hi), hi, ret) : ret;
}

UOp *tensor_isnan(UOp *a) { return tensor_ne(a, a); }

UOp *tensor_isinf(UOp *a) {
  UOp *pos = tensor_mul(tensor_eq(a, tensor_weak_float(INFINITY)), uop_const_bool(true));
  UOp *neg = tensor_mul(tensor_eq(a, tensor_weak_float(-INFINITY)), uop_const_bool(true));
  return tensor_add(pos, neg);
}

UOp *tensor_ceil(UOp *a) {
  UOp *b = tensor_trunc(a);
  return tensor_where(tensor_gt(a, b), tensor_add(b, tensor_weak_int(1)), b);
}

UOp *tensor_floor(UOp *a) {
  UOp *b = tensor_trunc(a);
  return tensor_where(tensor_lt(a, b), tensor_sub(b, tensor_weak_int(1)), b);
}

static UOp *t_round(UOp *a) {
  UOp *b = tensor_div(tensor_trunc(a), tensor_weak_float(2.0), TG_ROUND_NONE);
  UOp *cond = tensor_eq(tensor_gt(a, tensor_weak_int(0)), tensor_eq(tensor_trunc(b), b));
  return tensor_where(cond, tensor_ceil(tensor_sub(a, tensor_weak_float(0.5))), tensor_floor(tensor_add(a, tensor_weak_float(0.5))));
}

UOp *tensor_sign(UOp *a) {
  UOp *inner = tensor_where(tensor_lt(a, tensor_weak_int(0)), tensor_const_like(a, const_int(-1), NULL), tensor_const_like(a, const_int(1), NULL));
  return tensor_where(tensor_ne(a, tensor_weak_int(0)), inner, tensor_const_like(a, const_int(0), NULL));
}

UOp *tensor_abs(UOp *a) { return tensor_mul(a, tensor_sign(a)); }
UOp *tensor_relu(UOp *a) { return tensor_where(tensor_gt(a, tensor_weak_int(0)), a, tensor_weak_int(0)); }
UOp *tensor_sigmoid(UOp *a) { return tensor_reciprocal(tensor_add(tensor_weak_int(1), tensor_exp2(tensor_mul(a, tensor_weak_float(-1 / M_LN2))))); }
UOp *tensor_tanh(UOp *a) { return tensor_sub(tensor_mul(tensor_weak_float(2.0), tensor_sigmoid(tensor_mul(tensor_weak_float(2.0), a))), tensor_weak_float(1.0)); }

UOp *tensor_logaddexp(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  UOp *m = tensor_maximum(a, b);
  return tensor_add(tensor_log(tensor_add(tensor_exp(tensor_sub(a, m)), tensor_exp(tensor_sub(b, m)))), m);
}

UOp *tensor_softplus(UOp *a, double beta) { return tensor_mul(tensor_weak_float(1 / beta), tensor_logaddexp(tensor_mul(a, tensor_weak_float(beta)), tensor_weak_float(0.0))); }

static UOp *poly_n(UOp *x, const double *p, int n) {
  UOp *acc = tensor_weak_float(0.0);
  for (int i = 0; i < n; i++) acc = tensor_add(tensor_mul(acc, x), tensor_weak_float(p[i]));
  return acc;
}

static UOp *t_erf(UOp *a) {
  static const double coef[] = {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592};
  UOp *t = tensor_div(tensor_weak_float(1.0), tensor_add(tensor_weak_float(1.0), tensor_mul(tensor_weak_float(0.3275911), tensor_abs(a))), TG_ROUND_NONE);
  UOp *inner = tensor_mul(tensor_mul(t, poly_n(t, coef, 5)), tensor_exp(tensor_neg(tensor_square(a))));
  return tensor_mul(tensor_sign(a), tensor_sub(tensor_weak_float(1.0), inner));
}

static UOp *t_relu6(UOp *a) { return tensor_sub(tensor_relu(a), tensor_relu(tensor_sub(a, tensor_weak_int(6)))); }

/* a scalar bound as a Python literal: integral values are ints, others floats */
static UOp *pyscalar(double v) { return v == floor(v) && fabs(v) < 9e15 ? tensor_weak_int((int64_t)v) : tensor_weak_float(v); }

/* ------------------------------------------------------------------------------------------------- public API */

typedef UOp *(*Bin)(UOp *, UOp *);
typedef UOp *(*Un)(UOp *);

static tg_tensor *bin(const char *op, Bin f, const tg_tensor *a, const tg_tensor *b) {
  tensor_ctx_begin(op);
  UOp *x = tensor_in(a, 1), *y = x ? tensor_in(b, 2) : NULL;
  return tensor_ctx_end(x && y ? f(x, y) : NULL);
}

static tg_tensor *un(const char *op, Un f, const tg_tensor *a) {
  tensor_ctx_begin(op);
  UOp *x = tensor_in(a, 1);
  return tensor_ctx_end(x ? f(x) : NULL);
}

static UOp *f_sub(UOp *a, UOp *b) { return tensor_sub(a, b); }
static UOp *f_div(UOp *a, UOp *b) { return tensor_div(a, b, TG_ROUND_NONE); }
static UOp *f_idiv(UOp *a, UOp *b) {
  if (!dt_is_int(a->dtype) || !dt_is_int(b->dtype)) return tensor_err("integer division needs ints, got %s and %s", a->dtype->name, b->dtype->name);
  return tensor_div(a, b, TG_ROUND_TRUNC);
}
static UOp *int_only(TgOp op, UOp *a, UOp *b, bool bools_ok) {
  bool ok = (dt_is_int(a->dtype) || (bools_ok && a->dtype == DT_BOOL)) && (dt_is_int(b->dtype) || (bools_ok && b->dtype == DT_BOOL));
  if (!ok) return tensor_err("%s needs %s operands, got %s and %s", uop_op_name(op), bools_ok ? "int or bool" : "int", a->dtype->name, b->dtype->name);
  return tensor_alu(op, a, b);
}
static UOp *f_and(UOp *a, UOp *b) { return int_only(TG_OP_AND, a, b, true); }
static UOp *f_or(UOp *a, UOp *b) { return int_only(TG_OP_OR, a, b, true); }
static UOp *f_xor(UOp *a, UOp *b) { return int_only(TG_OP_XOR, a, b, true); }
static UOp *f_shl(UOp *a, UOp *b) { return int_only(TG_OP_SHL, a, b, false); }
static UOp *f_shr(UOp *a, UOp *b) { return int_only(TG_OP_SHR, a, b, false); }
/* tinygrad's pow: an int result with a Python-scalar operand that is not a non-negative int ("int ** -2", "int ** 0.5"
 * with an int result) is refused: int pow is only defined for non-negative int exponents */
static bool pow_scalar_ok(const UOp *u) {
  if (u->op != TG_OP_CONST || !dt_is_weak(u->dtype)) return true;
  return u->arg.c.kind == CK_INT ? u->arg.c.i >= 0 : u->arg.c.kind != CK_FLOAT;
}
static UOp *f_pow(UOp *a, UOp *b) {
  if (!dt_is_float(dt_least_upper(a->dtype, b->dtype)) && (!pow_scalar_ok(a) || !pow_scalar_ok(b)))
    return tensor_err("base needs to be float (%s ** %s)", a->dtype->name, b->dtype->name);
  return tensor_pow(a, b);
}
static UOp *f_max(UOp *a, UOp *b) { return tensor_maximum(a, b); }
static UOp *f_min(UOp *a, UOp *b) { return tensor_minimum(a, b); }

tg_tensor *tg_add(const tg_tensor *a, const tg_tensor *b) { return bin("tg_add", tensor_add, a, b); }
tg_tensor *tg_sub(const tg_tensor *a, const tg_tensor *b) { return bin("tg_sub", f_sub, a, b); }
tg_tensor *tg_mul(const tg_tensor *a, const tg_tensor *b) { return bin("tg_mul", tensor_mul, a, b); }
tg_tensor *tg_div(const tg_tensor *a, const tg_tensor *b) { return bin("tg_div", f_div, a, b); }
tg_tensor *tg_idiv(const tg_tensor *a, const tg_tensor *b) { return bin("tg_idiv", f_idiv, a, b); }
tg_tensor *tg_mod(const tg_tensor *a, const tg_tensor *b) { return bin("tg_mod", tensor_mod, a, b); }
tg_tensor *tg_fmod(const tg_tensor *a, const tg_tensor *b) { return bin("tg_fmod", tensor_fmod, a, b); }
tg_tensor *tg_pow(const tg_tensor *a, const tg_tensor *b) { return bin("tg_pow", f_pow, a, b); }
tg_tensor *tg_maximum(const tg_tensor *a, const tg_tensor *b) { return bin("tg_maximum", f_max, a, b); }
tg_tensor *tg_minimum(const tg_tensor *a, const tg_tensor *b) { return bin("tg_minimum", f_min, a, b); }
tg_tensor *tg_lt(const tg_tensor *a, const tg_tensor *b) { return bin("tg_lt", tensor_lt, a, b); }
tg_tensor *tg_le(const tg_tensor *a, const tg_tensor *b) { return bin("tg_le", tensor_le, a, b); }
tg_tensor *tg_gt(const tg_tensor *a, const tg_tensor *b) { return bin("tg_gt", tensor_gt, a, b); }
tg_tensor *tg_ge(const tg_tensor *a, const tg_tensor *b) { return bin("tg_ge", tensor_ge, a, b); }
tg_tensor *tg_eq(const tg_tensor *a, const tg_tensor *b) { return bin("tg_eq", tensor_eq, a, b); }
tg_tensor *tg_ne(const tg_tensor *a, const tg_tensor *b) { return bin("tg_ne", tensor_ne, a, b); }
tg_tensor *tg_bitwise_and(const tg_tensor *a, const tg_tensor *b) { return bin("tg_bitwise_and", f_and, a, b); }
tg_tensor *tg_bitwise_or(const tg_tensor *a, const tg_tensor *b) { return bin("tg_bitwise_or", f_or, a, b); }
tg_tensor *tg_bitwise_xor(const tg_tensor *a, const tg_tensor *b) { return bin("tg_bitwise_xor", f_xor, a, b); }
tg_tensor *tg_lshift(const tg_tensor *a, const tg_tensor *b) { return bin("tg_lshift", f_shl, a, b); }
tg_tensor *tg_rshift(const tg_tensor *a, const tg_tensor *b) { return bin("tg_rshift", f_shr, a, b); }

tg_tensor *tg_div_mode(const tg_tensor *a, const tg_tensor *b, tg_rounding mode) {
  tensor_ctx_begin("tg_div_mode");
  UOp *x = tensor_in(a, 1), *y = x ? tensor_in(b, 2) : NULL, *r = NULL;
  if (x && y) r = (unsigned)mode > TG_ROUND_FLOOR ? tensor_err("rounding mode %d is not supported", (int)mode) : tensor_div(x, y, mode);
  return tensor_ctx_end(r);
}

tg_tensor *tg_where(const tg_tensor *cond, const tg_tensor *x, const tg_tensor *y) {
  tensor_ctx_begin("tg_where");
  UOp *c = tensor_in(cond, 1), *a = c ? tensor_in(x, 2) : NULL, *b = a ? tensor_in(y, 3) : NULL;
  return tensor_ctx_end(b ? tensor_where(c, a, b) : NULL);
}

/* unary ops whose domain is float-like (ints promote to float as in tinygrad) */
static UOp *f_bitnot(UOp *a) { return tensor_bitwise_not(a); }
static UOp *f_round(UOp *a) { return t_round(a); }
static UOp *f_rsqrt(UOp *a) { return tensor_reciprocal(tensor_sqrt(a)); }
static UOp *f_tan(UOp *a) { return tensor_div(tensor_sin(a), tensor_cos(a), TG_ROUND_NONE); }
static UOp *f_isfinite(UOp *a) { return tensor_logical_not(tensor_alu(TG_OP_OR, tensor_isinf(a), tensor_isnan(a))); }
static UOp *f_relu6(UOp *a) { return t_relu6(a); }
static UOp *f_hardsigmoid(UOp *a) {
  UOp *ax = tensor_add(tensor_mul(tensor_weak_float(1.0 / 6), a), tensor_weak_float(0.5));
  UOp *ax2 = tensor_sub(tensor_add(tensor_mul(tensor_weak_float(1.0 / 6), a), tensor_weak_float(0.5)), tensor_weak_int(1));
  return tensor_sub(tensor_relu(ax), tensor_relu(ax2));
}
static UOp *f_gelu(UOp *a) {
  UOp *inner = tensor_mul(tensor_weak_float(sqrt(2 / M_PI)), tensor_add(a, tensor_mul(tensor_weak_float(0.044715), tensor_pow(a, tensor_weak_int(3)))));
  return tensor_mul(tensor_mul(tensor_weak_float(0.5), a), tensor_add(tensor_weak_int(1), tensor_tanh(inner)));
}
static UOp *f_quick_gelu(UOp *a) { return tensor_mul(a, tensor_sigmoid(tensor_mul(a, tensor_weak_float(1.702)))); }
static UOp *f_swish(UOp *a) { return tensor_mul(a, tensor_sigmoid(a)); }
static UOp *f_hardswish(UOp *a) { return tensor_mul(tensor_mul(a, t_relu6(tensor_add(a, tensor_weak_int(3)))), tensor_weak_float(1.0 / 6)); }
static UOp *f_softsign(UOp *a) { return tensor_div(a, tensor_add(tensor_weak_int(1), tensor_abs(a)), TG_ROUND_NONE); }
static UOp *f_mish(UOp *a) { return tensor_mul(a, tensor_tanh(tensor_softplus(a, 1.0))); }
static UOp *f_selu(UOp *a) {
  return tensor_mul(tensor_weak_float(1.0507), tensor_where(tensor_ge(a, tensor_weak_int(0)), a, tensor_mul(tensor_weak_float(1.67326), tensor_sub(tensor_exp(a), tensor_weak_int(1)))));
}
static UOp *f_logsigmoid(UOp *a) { return tensor_neg(tensor_softplus(tensor_neg(a), 1.0)); }
static UOp *f_erf(UOp *a) { return t_erf(a); }
static UOp *f_sinh(UOp *a) { return tensor_div(tensor_sub(tensor_exp(a), tensor_exp(tensor_neg(a))), tensor_weak_int(2), TG_ROUND_NONE); }
static UOp *f_cosh(UOp *a) { return tensor_div(tensor_add(tensor_exp(a), tensor_exp(tensor_neg(a))), tensor_weak_int(2), TG_ROUND_NONE); }

static UOp *t_asin(UOp *a) {
  static const double coef[] = {-0.0012624911, 0.0066700901, -0.0170881256, 0.0308918810,
                                -0.0501743046, 0.0889789874, -0.2145988016, 1.5707963050};
  UOp *x = tensor_sub(tensor_weak_float(M_PI / 2), tensor_mul(tensor_sqrt(tensor_sub(tensor_weak_float(1.0), tensor_abs(a))), poly_n(tensor_abs(a), coef, 8)));
  return tensor_mul(tensor_sign(a), x);
}
static UOp *f_log10(UOp *a) { return tensor_mul(tensor_log2(a), tensor_weak_float(log10(2.0))); }
static UOp *f_acos(UOp *a) { return tensor_sub(tensor_weak_float(M_PI / 2), t_asin(a)); }
static UOp *f_atan(UOp *a) { return t_asin(tensor_div(a, tensor_sqrt(tensor_add(tensor_weak_int(1), tensor_mul(a, a))), TG_ROUND_NONE)); }
static UOp *f_atanh(UOp *a) {
  return tensor_div(tensor_log(tensor_div(tensor_add(tensor_weak_int(1), a), tensor_sub(tensor_weak_int(1), a), TG_ROUND_NONE)), tensor_weak_int(2), TG_ROUND_NONE);
}
static UOp *f_asinh(UOp *a) { return tensor_log(tensor_add(a, tensor_sqrt(tensor_add(tensor_square(a), tensor_weak_int(1))))); }
static UOp *f_acosh(UOp *a) { return tensor_log(tensor_add(a, tensor_sqrt(tensor_sub(tensor_square(a), tensor_weak_int(1))))); }
static UOp *f_copysign(UOp *a, UOp *b) {
  if (!broadcasted(&a, &b)) return NULL;
  UOp *mag = tensor_abs(a);
  return tensor_where(tensor_alu(TG_OP_OR, tensor_lt(b, tensor_weak_int(0)), tensor_lt(tensor_reciprocal(b), tensor_weak_int(0))), tensor_neg(mag), mag);
}

tg_tensor *tg_log10(const tg_tensor *a) { return un("tg_log10", f_log10, a); }
tg_tensor *tg_asin(const tg_tensor *a) { return un("tg_asin", t_asin, a); }
tg_tensor *tg_acos(const tg_tensor *a) { return un("tg_acos", f_acos, a); }
tg_tensor *tg_atan(const tg_tensor *a) { return un("tg_atan", f_atan, a); }
tg_tensor *tg_asinh(const tg_tensor *a) { return un("tg_asinh", f_asinh, a); }
tg_tensor *tg_acosh(const tg_tensor *a) { return un("tg_acosh", f_acosh, a); }
tg_tensor *tg_atanh(const tg_tensor *a) { return un("tg_atanh", f_atanh, a); }
tg_tensor *tg_copysign(const tg_tensor *a, const tg_tensor *b) { return bin("tg_copysign", f_copysign, a, b); }
tg_tensor *tg_logaddexp(const tg_tensor *a, const tg_tensor *b) { return bin("tg_logaddexp", tensor_logaddexp, a, b); }

tg_tensor *tg_masked_fill(const tg_tensor *t, const tg_tensor *mask, const tg_tensor *value) {
  tensor_ctx_begin("tg_masked_fill");
  UOp *x = tensor_in(t, 1), *m = x ? tensor_in(mask, 2) : NULL, *v = m ? tensor_in(value, 3) : NULL;
  return tensor_ctx_end(v ? tensor_where(m, v, x) : NULL);
}

/* tinygrad lerp: a + (end - a) * weight; uint8 with a tensor weight interpolates in 7-bit fixed point */
tg_tensor *tg_lerp(const tg_tensor *a, const tg_tensor *end, const tg_tensor *weight) {
  tensor_ctx_begin("tg_lerp");
  UOp *x = tensor_in(a, 1), *e = x ? tensor_in(end, 2) : NULL, *w = e ? tensor_in(weight, 3) : NULL, *r = NULL;
  if (w) {
    bool python_scalar = dt_is_weak(w->dtype) && w->op == TG_OP_CONST;
    if (x->dtype == DT_UINT8 && !python_scalar) {
      UOp *w_i = tensor_cast(tensor_add(tensor_mul(w, tensor_weak_int(1 << 7)), tensor_weak_float(0.5)), DT_INT16);
      UOp *d = tensor_add(tensor_mul(tensor_cast(tensor_sub(e, x), DT_INT8), w_i), tensor_weak_int(1 << 6));
      r = tensor_cast(tensor_add(x, tensor_alu(TG_OP_SHR, tensor_cast(d, DT_UINT16), tensor_weak_int(7))), DT_UINT8);
    } else r = tensor_add(x, tensor_mul(tensor_sub(e, x), w));
  }
  return tensor_ctx_end(r);
}

tg_tensor *tg_neg(const tg_tensor *a) { return un("tg_neg", tensor_neg, a); }
tg_tensor *tg_abs(const tg_tensor *a) { return un("tg_abs", tensor_abs, a); }
tg_tensor *tg_sign(const tg_tensor *a) { return un("tg_sign", tensor_sign, a); }
tg_tensor *tg_exp(const tg_tensor *a) { return un("tg_exp", tensor_exp, a); }
tg_tensor *tg_exp2(const tg_tensor *a) { return un("tg_exp2", tensor_exp2, a); }
tg_tensor *tg_log(const tg_tensor *a) { return un("tg_log", tensor_log, a); }
tg_tensor *tg_log2(const tg_tensor *a) { return un("tg_log2", tensor_log2, a); }
tg_tensor *tg_sqrt(const tg_tensor *a) { return un("tg_sqrt", tensor_sqrt, a); }
tg_tensor *tg_rsqrt(const tg_tensor *a) { return un("tg_rsqrt", f_rsqrt, a); }
tg_tensor *tg_reciprocal(const tg_tensor *a) { return un("tg_reciprocal", tensor_reciprocal, a); }
tg_tensor *tg_square(const tg_tensor *a) { return un("tg_square", tensor_square, a); }
tg_tensor *tg_sin(const tg_tensor *a) { return un("tg_sin", tensor_sin, a); }
tg_tensor *tg_cos(const tg_tensor *a) { return un("tg_cos", tensor_cos, a); }
tg_tensor *tg_tan(const tg_tensor *a) { return un("tg_tan", f_tan, a); }
tg_tensor *tg_trunc(const tg_tensor *a) { return un("tg_trunc", tensor_trunc, a); }
tg_tensor *tg_floor(const tg_tensor *a) { return un("tg_floor", tensor_floor, a); }
tg_tensor *tg_ceil(const tg_tensor *a) { return un("tg_ceil", tensor_ceil, a); }
tg_tensor *tg_round(const tg_tensor *a) { return un("tg_round", f_round, a); }
tg_tensor *tg_isnan(const tg_tensor *a) { return un("tg_isnan", tensor_isnan, a); }
tg_tensor *tg_isinf(const tg_tensor *a) { return un("tg_isinf", tensor_isinf, a); }
tg_tensor *tg_isfinite(const tg_tensor *a) { return un("tg_isfinite", f_isfinite, a); }
tg_tensor *tg_bitwise_not(const tg_tensor *a) { return un("tg_bitwise_not", f_bitnot, a); }
tg_tensor *tg_logical_not(const tg_tensor *a) { return un("tg_logical_not", tensor_logical_not, a); }
tg_tensor *tg_relu(const tg_tensor *a) { return un("tg_relu", tensor_relu, a); }
tg_tensor *tg_relu6(const tg_tensor *a) { return un("tg_relu6", f_relu6, a); }
tg_tensor *tg_sigmoid(const tg_tensor *a) { return un("tg_sigmoid", tensor_sigmoid, a); }
tg_tensor *tg_hardsigmoid(const tg_tensor *a) { return un("tg_hardsigmoid", f_hardsigmoid, a); }
tg_tensor *tg_tanh(const tg_tensor *a) { return un("tg_tanh", tensor_tanh, a); }
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
  tensor_ctx_begin("tg_softplus");
  UOp *x = tensor_in(a, 1), *r = NULL;
  if (x) r = beta == 0 || !isfinite(beta) ? tensor_err("beta must be finite and nonzero, got %g", beta) : tensor_softplus(x, beta);
  return tensor_ctx_end(r);
}

tg_tensor *tg_leaky_relu(const tg_tensor *a, double neg_slope) {
  tensor_ctx_begin("tg_leaky_relu");
  UOp *x = tensor_in(a, 1);
  return tensor_ctx_end(x ? tensor_where(tensor_lt(x, tensor_weak_int(0)), tensor_mul(pyscalar(neg_slope), x), x) : NULL);
}

tg_tensor *tg_elu(const tg_tensor *a, double alpha) {
  tensor_ctx_begin("tg_elu");
  UOp *x = tensor_in(a, 1);
  return tensor_ctx_end(x ? tensor_sub(tensor_relu(x), tensor_mul(pyscalar(alpha), tensor_relu(tensor_sub(tensor_weak_int(1), tensor_exp(x))))) : NULL);
}

tg_tensor *tg_celu(const tg_tensor *a, double alpha) {
  tensor_ctx_begin("tg_celu");
  UOp *x = tensor_in(a, 1), *r = NULL;
  if (x && alpha == 0) r = tensor_err("alpha must be nonzero");
  else if (x) {
    UOp *al = pyscalar(alpha);
    r = tensor_add(tensor_maximum(x, tensor_weak_int(0)), tensor_minimum(tensor_mul(al, tensor_sub(tensor_exp(tensor_div(x, al, TG_ROUND_NONE)), tensor_weak_int(1))), tensor_weak_int(0)));
  }
  return tensor_ctx_end(r);
}

tg_tensor *tg_hardtanh(const tg_tensor *a, double min_val, double max_val) {
  tensor_ctx_begin("tg_hardtanh");
  UOp *x = tensor_in(a, 1);
  return tensor_ctx_end(x ? tensor_clamp(x, pyscalar(min_val), pyscalar(max_val)) : NULL);
}

tg_tensor *tg_clamp(const tg_tensor *a, double min, double max) {
  tensor_ctx_begin("tg_clamp");
  UOp *x = tensor_in(a, 1);
  return tensor_ctx_end(x ? tensor_clamp(x, isnan(min) ? NULL : pyscalar(min), isnan(max) ? NULL : pyscalar(max)) : NULL);
}

static const DType *public_dtype(tg_dtype d) {
  if ((unsigned)d >= TG_DTYPE_COUNT || d == TG_VOID) {
    tensor_err("invalid dtype %d", (int)d);
    return NULL;
  }
  return &tg_dtype_table[d];
}

tg_tensor *tg_cast(const tg_tensor *a, tg_dtype dtype) {
  tensor_ctx_begin("tg_cast");
  UOp *x = tensor_in(a, 1);
  const DType *d = x ? public_dtype(dtype) : NULL;
  return tensor_ctx_end(d ? tensor_cast(x, d) : NULL);
}

tg_tensor *tg_bitcast(const tg_tensor *a, tg_dtype dtype) {
  tensor_ctx_begin("tg_bitcast");
  UOp *x = tensor_in(a, 1);
  const DType *d = x ? public_dtype(dtype) : NULL;
  return tensor_ctx_end(d ? tensor_bitcast(x, d) : NULL);
}
