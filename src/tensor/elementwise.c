/* elementwise.c — the elementwise part of the Tensor API: each tg_* call wraps a builder of uop/mixin_elementwise.c
 * (or a composite tinygrad defines on Tensor only: hardswish, asin, erf-based gelu ...) in a build context. Binary
 * calls share one wrapper (bin) and unary calls another (un), so argument checks and error names are uniform. */
#include "tensor/tensor.h"

#include <math.h>

/* ------------------------------------------------------------------------------------------------- public API */

/* Every binary call is bin(name, builder): the second argument is only read once the first is valid, so the error
 * names the first bad argument; the builder itself broadcasts and promotes. Unary calls go through un(). */
typedef UOp *(*Bin)(UOp *, UOp *);
typedef UOp *(*Un)(UOp *);

/* The most common call needs no build context: two strong tensors of one dtype, one concrete shape and one device,
 * and an op whose builder then makes a single ALU node (nothing to promote or broadcast). That node and its handle
 * are made directly: the same node (interned) and the same shape and device the context would give. NULL: not this
 * case (or a dtype the op refuses), the general path decides. */
static tg_tensor *bin_same(TgOp alu, const tg_tensor *a, const tg_tensor *b) {
  if (!a || !b || a->symbolic || b->symbolic || a->device != b->device || a->shape.ndim != b->shape.ndim) return NULL;
  const DType *dt = a->uop->dtype;
  if (dt != b->uop->dtype || dt_is_weak(dt)) return NULL;
  if (memcmp(a->shape.d, b->shape.d, (size_t)a->shape.ndim * sizeof *a->shape.d) != 0) return NULL;
  UOp *src[2] = {a->uop, b->uop};
  const DType *out = uop_derive_dtype(alu, src, 2, NULL);
  if (!out) return NULL;
  UOpScope s = uop_scope_begin();
  tg_tensor *t = tensor_handle_known(uop_new(alu, out, src, 2, arg_none()), &a->shape, a->device);
  uop_scope_end(s);
  return t;
}

static tg_tensor *bin(const char *op, Bin f, const tg_tensor *a, const tg_tensor *b) {
  mix_ctx_begin(op);
  UOp *x = tensor_in(a, 1), *y = x ? tensor_in(b, 2) : NULL;
  return tensor_ctx_end(x && y ? f(x, y) : NULL);
}

static tg_tensor *un(const char *op, Un f, const tg_tensor *a) {
  mix_ctx_begin(op);
  UOp *x = tensor_in(a, 1);
  return tensor_ctx_end(x ? f(x) : NULL);
}

/* The f_* adapters give a builder with extra arguments (a rounding mode, a dtype check) the Bin/Un signature.
 * tg_div is true division (ints promote to float, tinygrad's `/`); tg_idiv takes ints only and truncates toward
 * zero like C's `/` (Python's floor division is tg_div_mode with TG_ROUND_FLOOR). */
static UOp *f_div(UOp *a, UOp *b) { return mix_div(a, b, TG_ROUND_NONE); }
static UOp *f_idiv(UOp *a, UOp *b) {
  if (!dt_is_int(a->dtype) || !dt_is_int(b->dtype)) return mix_err("integer division needs ints, got %s and %s", a->dtype->name, b->dtype->name);
  return mix_div(a, b, TG_ROUND_TRUNC);
}
/* Bitwise ops are defined for ints (and bools for and/or/xor, tinygrad's logical ops); shifts for ints only. */
static UOp *int_only(TgOp op, UOp *a, UOp *b, bool bools_ok) {
  bool ok = (dt_is_int(a->dtype) || (bools_ok && a->dtype == DT_BOOL)) && (dt_is_int(b->dtype) || (bools_ok && b->dtype == DT_BOOL));
  if (!ok) return mix_err("%s needs %s operands, got %s and %s", uop_op_name(op), bools_ok ? "int or bool" : "int", a->dtype->name, b->dtype->name);
  return mix_alu(op, a, b);
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
    return mix_err("base needs to be float (%s ** %s)", a->dtype->name, b->dtype->name);
  return mix_pow(a, b);
}

/* The table of binary entry points: name, builder (and for the single-ALU ones, the bin_same fast path). */
tg_tensor *tg_add(const tg_tensor *a, const tg_tensor *b) {
  tg_tensor *t = bin_same(TG_OP_ADD, a, b);
  return t ? t : bin("tg_add", mix_add, a, b);
}
tg_tensor *tg_sub(const tg_tensor *a, const tg_tensor *b) { return bin("tg_sub", mix_sub, a, b); }
tg_tensor *tg_mul(const tg_tensor *a, const tg_tensor *b) {
  tg_tensor *t = bin_same(TG_OP_MUL, a, b);
  return t ? t : bin("tg_mul", mix_mul, a, b);
}
tg_tensor *tg_div(const tg_tensor *a, const tg_tensor *b) { return bin("tg_div", f_div, a, b); }
tg_tensor *tg_idiv(const tg_tensor *a, const tg_tensor *b) { return bin("tg_idiv", f_idiv, a, b); }
tg_tensor *tg_mod(const tg_tensor *a, const tg_tensor *b) { return bin("tg_mod", mix_mod, a, b); }
tg_tensor *tg_fmod(const tg_tensor *a, const tg_tensor *b) { return bin("tg_fmod", mix_fmod, a, b); }
tg_tensor *tg_pow(const tg_tensor *a, const tg_tensor *b) { return bin("tg_pow", f_pow, a, b); }
tg_tensor *tg_maximum(const tg_tensor *a, const tg_tensor *b) {
  tg_tensor *t = bin_same(TG_OP_MAX, a, b);
  return t ? t : bin("tg_maximum", mix_maximum, a, b);
}
tg_tensor *tg_minimum(const tg_tensor *a, const tg_tensor *b) { return bin("tg_minimum", mix_minimum, a, b); }
tg_tensor *tg_lt(const tg_tensor *a, const tg_tensor *b) {
  tg_tensor *t = bin_same(TG_OP_CMPLT, a, b);
  return t ? t : bin("tg_lt", mix_lt, a, b);
}
tg_tensor *tg_le(const tg_tensor *a, const tg_tensor *b) { return bin("tg_le", mix_le, a, b); }
tg_tensor *tg_gt(const tg_tensor *a, const tg_tensor *b) {
  tg_tensor *t = bin_same(TG_OP_CMPLT, b, a);
  return t ? t : bin("tg_gt", mix_gt, a, b);
}
tg_tensor *tg_ge(const tg_tensor *a, const tg_tensor *b) { return bin("tg_ge", mix_ge, a, b); }
tg_tensor *tg_eq(const tg_tensor *a, const tg_tensor *b) { return bin("tg_eq", mix_eq, a, b); }
tg_tensor *tg_ne(const tg_tensor *a, const tg_tensor *b) {
  tg_tensor *t = bin_same(TG_OP_CMPNE, a, b);
  return t ? t : bin("tg_ne", mix_ne, a, b);
}
tg_tensor *tg_bitwise_and(const tg_tensor *a, const tg_tensor *b) { return bin("tg_bitwise_and", f_and, a, b); }
tg_tensor *tg_bitwise_or(const tg_tensor *a, const tg_tensor *b) { return bin("tg_bitwise_or", f_or, a, b); }
tg_tensor *tg_bitwise_xor(const tg_tensor *a, const tg_tensor *b) { return bin("tg_bitwise_xor", f_xor, a, b); }
tg_tensor *tg_lshift(const tg_tensor *a, const tg_tensor *b) { return bin("tg_lshift", f_shl, a, b); }
tg_tensor *tg_rshift(const tg_tensor *a, const tg_tensor *b) { return bin("tg_rshift", f_shr, a, b); }

/* Division with an explicit rounding (torch.div's rounding_mode): none (true division), trunc, floor. */
tg_tensor *tg_div_mode(const tg_tensor *a, const tg_tensor *b, tg_rounding mode) {
  mix_ctx_begin("tg_div_mode");
  UOp *x = tensor_in(a, 1), *y = x ? tensor_in(b, 2) : NULL, *r = NULL;
  if (x && y) r = (unsigned)mode > TG_ROUND_FLOOR ? mix_err("rounding mode %d is not supported", (int)mode) : mix_div(x, y, mode);
  return tensor_ctx_end(r);
}

tg_tensor *tg_where(const tg_tensor *cond, const tg_tensor *x, const tg_tensor *y) {
  mix_ctx_begin("tg_where");
  UOp *c = tensor_in(cond, 1), *a = c ? tensor_in(x, 2) : NULL, *b = a ? tensor_in(y, 3) : NULL;
  return tensor_ctx_end(b ? mix_where(c, a, b) : NULL);
}

/* unary ops whose domain is float-like (ints promote to float as in tinygrad) */
/* Composites tinygrad defines on Tensor (tensor.py), each the same formula in the same order, so the graph and its
 * rounding match tinygrad's: e.g. tan is sin/cos, not a polynomial, and gelu is the tanh approximation. */
static UOp *f_rsqrt(UOp *a) { return mix_reciprocal(mix_sqrt(a)); }
static UOp *f_tan(UOp *a) { return mix_div(mix_sin(a), mix_cos(a), TG_ROUND_NONE); }
static UOp *f_isfinite(UOp *a) { return mix_logical_not(mix_alu(TG_OP_OR, mix_isinf(a), mix_isnan(a))); }
/* relu(x/6 + 0.5) - relu(x/6 + 0.5 - 1): the clamp to [0, 1] written as two relus, as tinygrad does. */
static UOp *f_hardsigmoid(UOp *a) {
  UOp *ax = mix_add(mix_mul(mix_weak_float(1.0 / 6), a), mix_weak_float(0.5));
  UOp *ax2 = mix_sub(mix_add(mix_mul(mix_weak_float(1.0 / 6), a), mix_weak_float(0.5)), mix_weak_int(1));
  return mix_sub(mix_relu(ax), mix_relu(ax2));
}
static UOp *f_gelu(UOp *a) {
  UOp *inner = mix_mul(mix_weak_float(sqrt(2 / M_PI)), mix_add(a, mix_mul(mix_weak_float(0.044715), mix_pow(a, mix_weak_int(3)))));
  return mix_mul(mix_mul(mix_weak_float(0.5), a), mix_add(mix_weak_int(1), mix_tanh(inner)));
}
static UOp *f_quick_gelu(UOp *a) { return mix_mul(a, mix_sigmoid(mix_mul(a, mix_weak_float(1.702)))); }
static UOp *f_swish(UOp *a) { return mix_mul(a, mix_sigmoid(a)); }
static UOp *f_hardswish(UOp *a) { return mix_mul(mix_mul(a, mix_relu6(mix_add(a, mix_weak_int(3)))), mix_weak_float(1.0 / 6)); }
static UOp *f_softsign(UOp *a) { return mix_div(a, mix_add(mix_weak_int(1), mix_abs(a)), TG_ROUND_NONE); }
static UOp *f_mish(UOp *a) { return mix_mul(a, mix_tanh(mix_softplus(a, 1.0))); }
/* tinygrad's constants (alpha 1.67326, gamma 1.0507), shorter than torch's exact SELU values. */
static UOp *f_selu(UOp *a) {
  return mix_mul(mix_weak_float(1.0507), mix_where(mix_ge(a, mix_weak_int(0)), a, mix_mul(mix_weak_float(1.67326), mix_sub(mix_exp(a), mix_weak_int(1)))));
}
static UOp *f_logsigmoid(UOp *a) { return mix_neg(mix_softplus(mix_neg(a), 1.0)); }
static UOp *f_sinh(UOp *a) { return mix_div(mix_sub(mix_exp(a), mix_exp(mix_neg(a))), mix_weak_int(2), TG_ROUND_NONE); }
static UOp *f_cosh(UOp *a) { return mix_div(mix_add(mix_exp(a), mix_exp(mix_neg(a))), mix_weak_int(2), TG_ROUND_NONE); }

/* tinygrad asin: pi/2 - sqrt(1-|x|) * poly(|x|) (Abramowitz-Stegun 4.4.46, 8 terms), odd by sign(x); acos and atan
 * are built from it, as in tinygrad. */
static UOp *t_asin(UOp *a) {
  static const double coef[] = {-0.0012624911, 0.0066700901, -0.0170881256, 0.0308918810,
                                -0.0501743046, 0.0889789874, -0.2145988016, 1.5707963050};
  UOp *x = mix_sub(mix_weak_float(M_PI / 2), mix_mul(mix_sqrt(mix_sub(mix_weak_float(1.0), mix_abs(a))), mix_poly(mix_abs(a), coef, 8)));
  return mix_mul(mix_sign(a), x);
}
static UOp *f_log10(UOp *a) { return mix_mul(mix_log2(a), mix_weak_float(log10(2.0))); }
static UOp *f_acos(UOp *a) { return mix_sub(mix_weak_float(M_PI / 2), t_asin(a)); }
static UOp *f_atan(UOp *a) { return t_asin(mix_div(a, mix_sqrt(mix_add(mix_weak_int(1), mix_mul(a, a))), TG_ROUND_NONE)); }
static UOp *f_atanh(UOp *a) {
  return mix_div(mix_log(mix_div(mix_add(mix_weak_int(1), a), mix_sub(mix_weak_int(1), a), TG_ROUND_NONE)), mix_weak_int(2), TG_ROUND_NONE);
}
static UOp *f_asinh(UOp *a) { return mix_log(mix_add(a, mix_sqrt(mix_add(mix_square(a), mix_weak_int(1))))); }
static UOp *f_acosh(UOp *a) { return mix_log(mix_add(a, mix_sqrt(mix_sub(mix_square(a), mix_weak_int(1))))); }
/* copysign: |a| with b's sign, where -0.0 counts as negative (1/b < 0 catches it, as in tinygrad). */
static UOp *f_copysign(UOp *a, UOp *b) {
  if (!mix_broadcasted(&a, &b)) return NULL;
  UOp *mag = mix_abs(a);
  return mix_where(mix_alu(TG_OP_OR, mix_lt(b, mix_weak_int(0)), mix_lt(mix_reciprocal(b), mix_weak_int(0))), mix_neg(mag), mag);
}

tg_tensor *tg_log10(const tg_tensor *a) { return un("tg_log10", f_log10, a); }
tg_tensor *tg_asin(const tg_tensor *a) { return un("tg_asin", t_asin, a); }
tg_tensor *tg_acos(const tg_tensor *a) { return un("tg_acos", f_acos, a); }
tg_tensor *tg_atan(const tg_tensor *a) { return un("tg_atan", f_atan, a); }
tg_tensor *tg_asinh(const tg_tensor *a) { return un("tg_asinh", f_asinh, a); }
tg_tensor *tg_acosh(const tg_tensor *a) { return un("tg_acosh", f_acosh, a); }
tg_tensor *tg_atanh(const tg_tensor *a) { return un("tg_atanh", f_atanh, a); }
tg_tensor *tg_copysign(const tg_tensor *a, const tg_tensor *b) { return bin("tg_copysign", f_copysign, a, b); }
tg_tensor *tg_logaddexp(const tg_tensor *a, const tg_tensor *b) { return bin("tg_logaddexp", mix_logaddexp, a, b); }

/* masked_fill(mask, value) = where(mask, value, t): value broadcasts and promotes like any where operand. */
tg_tensor *tg_masked_fill(const tg_tensor *t, const tg_tensor *mask, const tg_tensor *value) {
  mix_ctx_begin("tg_masked_fill");
  UOp *x = tensor_in(t, 1), *m = x ? tensor_in(mask, 2) : NULL, *v = m ? tensor_in(value, 3) : NULL;
  return tensor_ctx_end(v ? mix_where(m, v, x) : NULL);
}

/* tinygrad lerp: a + (end - a) * weight; uint8 with a tensor weight interpolates in 7-bit fixed point */
tg_tensor *tg_lerp(const tg_tensor *a, const tg_tensor *end, const tg_tensor *weight) {
  mix_ctx_begin("tg_lerp");
  UOp *x = tensor_in(a, 1), *e = x ? tensor_in(end, 2) : NULL, *w = e ? tensor_in(weight, 3) : NULL, *r = NULL;
  if (w) {
    bool python_scalar = dt_is_weak(w->dtype) && w->op == TG_OP_CONST;
    if (x->dtype == DT_UINT8 && !python_scalar) {
      UOp *w_i = mix_cast(mix_add(mix_mul(w, mix_weak_int(1 << 7)), mix_weak_float(0.5)), DT_INT16);
      UOp *d = mix_add(mix_mul(mix_cast(mix_sub(e, x), DT_INT8), w_i), mix_weak_int(1 << 6));
      r = mix_cast(mix_add(x, mix_alu(TG_OP_SHR, mix_cast(d, DT_UINT16), mix_weak_int(7))), DT_UINT8);
    } else r = mix_add(x, mix_mul(mix_sub(e, x), w));
  }
  return tensor_ctx_end(r);
}

/* The table of unary entry points: name, builder. */
tg_tensor *tg_neg(const tg_tensor *a) { return un("tg_neg", mix_neg, a); }
tg_tensor *tg_abs(const tg_tensor *a) { return un("tg_abs", mix_abs, a); }
tg_tensor *tg_sign(const tg_tensor *a) { return un("tg_sign", mix_sign, a); }
tg_tensor *tg_exp(const tg_tensor *a) { return un("tg_exp", mix_exp, a); }
tg_tensor *tg_exp2(const tg_tensor *a) { return un("tg_exp2", mix_exp2, a); }
tg_tensor *tg_log(const tg_tensor *a) { return un("tg_log", mix_log, a); }
tg_tensor *tg_log2(const tg_tensor *a) { return un("tg_log2", mix_log2, a); }
tg_tensor *tg_sqrt(const tg_tensor *a) { return un("tg_sqrt", mix_sqrt, a); }
tg_tensor *tg_rsqrt(const tg_tensor *a) { return un("tg_rsqrt", f_rsqrt, a); }
tg_tensor *tg_reciprocal(const tg_tensor *a) { return un("tg_reciprocal", mix_reciprocal, a); }
tg_tensor *tg_square(const tg_tensor *a) { return un("tg_square", mix_square, a); }
tg_tensor *tg_sin(const tg_tensor *a) { return un("tg_sin", mix_sin, a); }
tg_tensor *tg_cos(const tg_tensor *a) { return un("tg_cos", mix_cos, a); }
tg_tensor *tg_tan(const tg_tensor *a) { return un("tg_tan", f_tan, a); }
tg_tensor *tg_trunc(const tg_tensor *a) { return un("tg_trunc", mix_trunc, a); }
tg_tensor *tg_floor(const tg_tensor *a) { return un("tg_floor", mix_floor, a); }
tg_tensor *tg_ceil(const tg_tensor *a) { return un("tg_ceil", mix_ceil, a); }
tg_tensor *tg_round(const tg_tensor *a) { return un("tg_round", mix_round, a); }
tg_tensor *tg_isnan(const tg_tensor *a) { return un("tg_isnan", mix_isnan, a); }
tg_tensor *tg_isinf(const tg_tensor *a) { return un("tg_isinf", mix_isinf, a); }
tg_tensor *tg_isfinite(const tg_tensor *a) { return un("tg_isfinite", f_isfinite, a); }
tg_tensor *tg_bitwise_not(const tg_tensor *a) { return un("tg_bitwise_not", mix_bitwise_not, a); }
tg_tensor *tg_logical_not(const tg_tensor *a) { return un("tg_logical_not", mix_logical_not, a); }
tg_tensor *tg_relu(const tg_tensor *a) { return un("tg_relu", mix_relu, a); }
tg_tensor *tg_relu6(const tg_tensor *a) { return un("tg_relu6", mix_relu6, a); }
tg_tensor *tg_sigmoid(const tg_tensor *a) { return un("tg_sigmoid", mix_sigmoid, a); }
tg_tensor *tg_hardsigmoid(const tg_tensor *a) { return un("tg_hardsigmoid", f_hardsigmoid, a); }
tg_tensor *tg_tanh(const tg_tensor *a) { return un("tg_tanh", mix_tanh, a); }
tg_tensor *tg_gelu(const tg_tensor *a) { return un("tg_gelu", f_gelu, a); }
tg_tensor *tg_quick_gelu(const tg_tensor *a) { return un("tg_quick_gelu", f_quick_gelu, a); }
tg_tensor *tg_silu(const tg_tensor *a) { return un("tg_silu", f_swish, a); }
tg_tensor *tg_swish(const tg_tensor *a) { return un("tg_swish", f_swish, a); }
tg_tensor *tg_hardswish(const tg_tensor *a) { return un("tg_hardswish", f_hardswish, a); }
tg_tensor *tg_softsign(const tg_tensor *a) { return un("tg_softsign", f_softsign, a); }
tg_tensor *tg_mish(const tg_tensor *a) { return un("tg_mish", f_mish, a); }
tg_tensor *tg_selu(const tg_tensor *a) { return un("tg_selu", f_selu, a); }
tg_tensor *tg_logsigmoid(const tg_tensor *a) { return un("tg_logsigmoid", f_logsigmoid, a); }
tg_tensor *tg_erf(const tg_tensor *a) { return un("tg_erf", mix_erf, a); }
tg_tensor *tg_sinh(const tg_tensor *a) { return un("tg_sinh", f_sinh, a); }
tg_tensor *tg_cosh(const tg_tensor *a) { return un("tg_cosh", f_cosh, a); }

/* Activations with a Python-number parameter: the parameter becomes a weak scalar (mix_py_scalar), so a float tensor
 * keeps its dtype and an int parameter stays an int literal in the graph, as tinygrad's graphs have it. */
tg_tensor *tg_softplus(const tg_tensor *a, double beta) {
  mix_ctx_begin("tg_softplus");
  UOp *x = tensor_in(a, 1), *r = NULL;
  if (x) r = beta == 0 || !isfinite(beta) ? mix_err("beta must be finite and nonzero, got %g", beta) : mix_softplus(x, beta);
  return tensor_ctx_end(r);
}

tg_tensor *tg_leaky_relu(const tg_tensor *a, double neg_slope) {
  mix_ctx_begin("tg_leaky_relu");
  UOp *x = tensor_in(a, 1);
  return tensor_ctx_end(x ? mix_where(mix_lt(x, mix_weak_int(0)), mix_mul(mix_py_scalar(neg_slope), x), x) : NULL);
}

tg_tensor *tg_elu(const tg_tensor *a, double alpha) {
  mix_ctx_begin("tg_elu");
  UOp *x = tensor_in(a, 1);
  return tensor_ctx_end(x ? mix_sub(mix_relu(x), mix_mul(mix_py_scalar(alpha), mix_relu(mix_sub(mix_weak_int(1), mix_exp(x))))) : NULL);
}

tg_tensor *tg_celu(const tg_tensor *a, double alpha) {
  mix_ctx_begin("tg_celu");
  UOp *x = tensor_in(a, 1), *r = NULL;
  if (x && alpha == 0) r = mix_err("alpha must be nonzero");
  else if (x) {
    UOp *al = mix_py_scalar(alpha);
    r = mix_add(mix_maximum(x, mix_weak_int(0)), mix_minimum(mix_mul(al, mix_sub(mix_exp(mix_div(x, al, TG_ROUND_NONE)), mix_weak_int(1))), mix_weak_int(0)));
  }
  return tensor_ctx_end(r);
}

tg_tensor *tg_hardtanh(const tg_tensor *a, double min_val, double max_val) {
  mix_ctx_begin("tg_hardtanh");
  UOp *x = tensor_in(a, 1);
  return tensor_ctx_end(x ? mix_clamp(x, mix_py_scalar(min_val), mix_py_scalar(max_val)) : NULL);
}

/* NaN for min or max means "no bound on that side" (tinygrad's clip(min_=None)). */
tg_tensor *tg_clamp(const tg_tensor *a, double min, double max) {
  mix_ctx_begin("tg_clamp");
  UOp *x = tensor_in(a, 1);
  return tensor_ctx_end(x ? mix_clamp(x, isnan(min) ? NULL : mix_py_scalar(min), isnan(max) ? NULL : mix_py_scalar(max)) : NULL);
}

/* Casts need a concrete target dtype: TG_VOID (the "default" elsewhere) is an error here. */
static const DType *public_dtype(tg_dtype d) {
  if ((unsigned)d >= TG_DTYPE_COUNT || d == TG_VOID) {
    mix_err("invalid dtype %d", (int)d);
    return NULL;
  }
  return &tg_dtype_table[d];
}

tg_tensor *tg_cast(const tg_tensor *a, tg_dtype dtype) {
  mix_ctx_begin("tg_cast");
  UOp *x = tensor_in(a, 1);
  const DType *d = x ? public_dtype(dtype) : NULL;
  return tensor_ctx_end(d ? mix_cast(x, d) : NULL);
}

tg_tensor *tg_bitcast(const tg_tensor *a, tg_dtype dtype) {
  mix_ctx_begin("tg_bitcast");
  UOp *x = tensor_in(a, 1);
  const DType *d = x ? public_dtype(dtype) : NULL;
  return tensor_ctx_end(d ? mix_bitcast(x, d) : NULL);
}
