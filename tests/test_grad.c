/* test_grad.c — autograd (src/grad): gradients of every differentiable Tensor op checked against central finite
 * differences in float64, the error rules (weak, constant and non-float targets, NULL, non-scalar roots), backward
 * filling and accumulating grads, detach, zero_grad, and the kernel counts of backward graphs against tinygrad's. */
#include <math.h>
#include <stdlib.h>

#include "test.h"
#include "tinygrad.h"
#include "schedule/schedule.h"
#include "tensor/tensor.h"
#include "grad/grad.h"
#include "grad_graph_cases.h"

/* ------------------------------------------------------------------------------------------- helpers */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(double lo, double hi) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static tg_tensor *f64(const double *v, const int64_t *shape, size_t ndim) { return tg_from_data(v, TG_FLOAT64, shape, ndim); }

static bool host_f64(tg_tensor *t, double *out, int64_t n) {
  if (!t || tg_numel(t) != n) return false;
  return tg_to_host(t, out, (size_t)n * sizeof(double)) == TG_OK;
}

#define MAX_IN 3
#define MAX_EL 256

/* A case: fn builds an output from the inputs; the harness differentiates sum(out * upstream) with a fixed random
 * upstream gradient, so every element of the output's gradient is distinct. */
typedef tg_tensor *(*GradFn)(tg_tensor *const *in);
typedef struct GradCase {
  const char *name;
  GradFn fn;
  int nin;
  int ndim[MAX_IN];
  int64_t shape[MAX_IN][4];
  double lo, hi;   /* inputs uniform in [lo, hi] */
  double tol;      /* absolute + relative tolerance (0: 1e-5) */
} GradCase;

static tg_tensor *loss_of(const GradCase *c, double data[MAX_IN][MAX_EL], const double *upstream, tg_tensor **in) {
  for (int i = 0; i < c->nin; i++) in[i] = f64(data[i], c->shape[i], (size_t)c->ndim[i]);
  tg_tensor *out = c->fn(in);
  if (!out) return NULL;
  tg_tensor *out64 = tg_get_dtype(out) == TG_FLOAT64 ? out : tg_cast(out, TG_FLOAT64);
  tg_tensor *up = f64(upstream, tg_shape(out64), (size_t)tg_ndim(out64));
  return tg_sum(tg_mul(out64, up), NULL, 0, false);
}

static double eval_loss(const GradCase *c, double data[MAX_IN][MAX_EL], const double *upstream) {
  tg_scope s = tg_scope_begin();
  tg_tensor *in[MAX_IN];
  double v = NAN;
  tg_tensor *loss = loss_of(c, data, upstream, in);
  if (!loss || tg_item_double(loss, &v) != TG_OK) v = NAN;
  tg_scope_end(s);
  return v;
}

static int64_t numel_of(const GradCase *c, int i) {
  int64_t n = 1;
  for (int k = 0; k < c->ndim[i]; k++) n *= c->shape[i][k];
  return n;
}

static void check_case(const GradCase *c) {
  static double data[MAX_IN][MAX_EL], upstream[MAX_EL * 8], analytic[MAX_EL];
  for (int i = 0; i < c->nin; i++)
    for (int64_t k = 0; k < numel_of(c, i); k++) data[i][k] = urand(c->lo, c->hi);
  for (int k = 0; k < MAX_EL * 8; k++) upstream[k] = urand(0.5, 1.5);
  double tol = c->tol > 0 ? c->tol : 1e-5;
  tg_scope s = tg_scope_begin();
  tg_tensor *in[MAX_IN], *grads[MAX_IN] = {NULL};
  tg_tensor *loss = loss_of(c, data, upstream, in);
  CHECK_MSG(loss != NULL, "%s: forward failed: %s", c->name, tg_last_error());
  if (!loss) { tg_scope_end(s); return; }
  tg_status st = tg_gradient(loss, (const tg_tensor *const *)in, (size_t)c->nin, grads);
  CHECK_MSG(st == TG_OK, "%s: gradient failed: %s", c->name, tg_last_error());
  for (int i = 0; st == TG_OK && i < c->nin; i++) {
    int64_t n = numel_of(c, i);
    CHECK_MSG(grads[i] && tg_ndim(grads[i]) == c->ndim[i] && tg_get_dtype(grads[i]) == TG_FLOAT64, "%s: grad %d shape/dtype", c->name, i);
    bool ok = host_f64(grads[i], analytic, n);
    CHECK_MSG(ok, "%s: grad %d not computed: %s", c->name, i, tg_last_error());
    if (!ok) continue;
    int bad = 0;
    for (int64_t k = 0; k < n; k++) {
      double keep = data[i][k], h = (c->tol > 1e-4 ? 1e-2 : 1e-6) * fmax(1.0, fabs(keep)); /* float32 inside: a wider step */
      data[i][k] = keep + h;
      double fp = eval_loss(c, data, upstream);
      data[i][k] = keep - h;
      double fm = eval_loss(c, data, upstream);
      data[i][k] = keep;
      double numeric = (fp - fm) / (2 * h);
      if (!(fabs(numeric - analytic[k]) <= tol * (1 + fabs(numeric)))) {
        if (bad++ < 3)
          tg_test_fail(__FILE__, __LINE__, "%s: d/d in%d[%lld]: analytic %.12g, numeric %.12g", c->name, i, (long long)k,
                       analytic[k], numeric);
      }
    }
    if (!bad) tg_test_passed++;
  }
  tg_scope_end(s);
}

/* ----------------------------------------------------------------------------------------- the op cases */

#define U(name, expr) \
  static tg_tensor *name(tg_tensor *const *x) { return (expr); }

/* elementwise */
U(f_neg, tg_neg(x[0]))
U(f_abs, tg_abs(x[0]))
U(f_sign, tg_mul(tg_sign(x[0]), x[0]))
U(f_exp, tg_exp(x[0]))
U(f_exp2, tg_exp2(x[0]))
U(f_log, tg_log(x[0]))
U(f_log2, tg_log2(x[0]))
U(f_log10, tg_log10(x[0]))
U(f_sqrt, tg_sqrt(x[0]))
U(f_rsqrt, tg_rsqrt(x[0]))
U(f_reciprocal, tg_reciprocal(x[0]))
U(f_square, tg_square(x[0]))
U(f_sin, tg_sin(x[0]))
U(f_cos, tg_cos(x[0]))
U(f_tan, tg_tan(x[0]))
U(f_trunc, tg_add(tg_trunc(x[0]), x[0]))
U(f_floor, tg_add(tg_floor(x[0]), x[0]))
U(f_ceil, tg_add(tg_ceil(x[0]), x[0]))
U(f_round, tg_add(tg_round(x[0]), x[0]))
U(f_clamp, tg_clamp(x[0], -0.5, 0.5))
U(f_relu, tg_relu(x[0]))
U(f_relu6, tg_relu6(x[0]))
U(f_sigmoid, tg_sigmoid(x[0]))
U(f_hardsigmoid, tg_hardsigmoid(x[0]))
U(f_tanh, tg_tanh(x[0]))
U(f_gelu, tg_gelu(x[0]))
U(f_quick_gelu, tg_quick_gelu(x[0]))
U(f_silu, tg_silu(x[0]))
U(f_swish, tg_swish(x[0]))
U(f_hardswish, tg_hardswish(x[0]))
U(f_softplus, tg_softplus(x[0], 1.0))
U(f_softplus2, tg_softplus(x[0], 2.0))
U(f_softsign, tg_softsign(x[0]))
U(f_mish, tg_mish(x[0]))
U(f_leaky_relu, tg_leaky_relu(x[0], 0.1))
U(f_elu, tg_elu(x[0], 1.0))
U(f_celu, tg_celu(x[0], 1.5))
U(f_selu, tg_selu(x[0]))
U(f_hardtanh, tg_hardtanh(x[0], -0.5, 0.5))
U(f_logsigmoid, tg_logsigmoid(x[0]))
U(f_erf, tg_erf(x[0]))
U(f_sinh, tg_sinh(x[0]))
U(f_cosh, tg_cosh(x[0]))
U(f_asin, tg_asin(x[0]))
U(f_acos, tg_acos(x[0]))
U(f_atan, tg_atan(x[0]))
U(f_asinh, tg_asinh(x[0]))
U(f_acosh, tg_acosh(x[0]))
U(f_atanh, tg_atanh(x[0]))
U(f_cast32, tg_cast(tg_mul(tg_cast(x[0], TG_FLOAT32), x[0]), TG_FLOAT64))
U(f_add, tg_add(x[0], x[1]))
U(f_sub, tg_sub(x[0], x[1]))
U(f_mul, tg_mul(x[0], x[1]))
U(f_div, tg_div(x[0], x[1]))
U(f_pow, tg_pow(x[0], x[1]))
U(f_pow_const, tg_pow(x[0], tg_const_float(3.0)))
U(f_pow_half, tg_pow(x[0], tg_const_float(0.5)))
U(f_rpow, tg_pow(tg_const_float(2.0), x[0]))
U(f_maximum, tg_maximum(x[0], x[1]))
U(f_minimum, tg_minimum(x[0], x[1]))
U(f_where, tg_where(tg_gt(x[0], x[1]), tg_mul(x[0], x[0]), x[1]))
U(f_copysign, tg_copysign(x[0], x[1]))
U(f_logaddexp, tg_logaddexp(x[0], x[1]))
U(f_lerp, tg_lerp(x[0], x[1], x[2]))
U(f_masked_fill, tg_masked_fill(x[0], tg_lt(x[1], tg_const_float(0)), tg_const_float(2.0)))
U(f_div_const, tg_div(tg_const_float(3.0), x[0]))
U(f_sub_scalar, tg_sub(tg_const_int(1), tg_mul(x[0], tg_const_float(2.5))))
U(f_chain, tg_exp(tg_mul(tg_sin(x[0]), tg_sqrt(tg_add(tg_square(x[1]), tg_const_float(1))))))
U(f_self_mul, tg_mul(tg_add(x[0], x[0]), tg_reciprocal(tg_add(tg_abs(x[0]), tg_const_float(1)))))

/* reductions */
U(f_sum, tg_sum(x[0], NULL, 0, false))
U(f_sum0k, tg_sum(x[0], TG_AXES(0), true))
U(f_sum01, tg_sum(x[0], TG_AXES(0, 2), false))
U(f_prod, tg_prod(x[0], NULL, 0, false))
U(f_prod1, tg_prod(x[0], TG_AXES(1), false))
U(f_max, tg_max(x[0], NULL, 0, false))
U(f_max1, tg_max(x[0], TG_AXES(1), true))
U(f_min0, tg_min(x[0], TG_AXES(0), false))
U(f_mean, tg_mean(x[0], TG_AXES(-1), false))
U(f_var, tg_var(x[0], TG_AXES(1), false, 1.0))
U(f_var0, tg_var(x[0], NULL, 0, true, 0.0))
U(f_std, tg_std(x[0], TG_AXES(0), false, 1.0))
U(f_logsumexp, tg_logsumexp(x[0], 1, false))
U(f_logsumexp0, tg_logsumexp(x[0], 0, true))
U(f_cumsum, tg_cumsum(x[0], 1))
U(f_cumsum0, tg_cumsum(x[0], 0))
U(f_softmax, tg_softmax(x[0], -1))
U(f_softmax0, tg_softmax(x[0], 0))
U(f_log_softmax, tg_log_softmax(x[0], 1))

/* movement */
U(f_reshape, tg_mul(tg_reshape(x[0], TG_SHAPE(4, 3)), x[1]))
U(f_permute, tg_permute(x[0], TG_AXES(2, 0, 1)))
U(f_transpose, tg_matmul(tg_transpose(x[0], 0, 1), x[0]))
U(f_expand, tg_mul(tg_expand(x[0], TG_SHAPE(2, 3, 4)), x[1]))
U(f_unsqueeze, tg_mul(tg_unsqueeze(x[0], 1), x[1]))
U(f_squeeze, tg_exp(tg_squeeze(x[0], 1)))
U(f_squeeze_all, tg_exp(tg_squeeze_all(x[0])))
U(f_flatten, tg_mul(tg_flatten(x[0], 1, -1), x[1]))
U(f_flip, tg_mul(tg_flip(x[0], TG_AXES(0, 2)), x[0]))
U(f_shrink, tg_square(tg_shrink(x[0], (const int64_t[]){1, 3, 0, 2}, 2)))
static tg_tensor *pad_mode(tg_tensor *t, tg_pad_mode mode) {
  return tg_square(tg_pad(t, (const int64_t[]){1, 2, 2, 1}, 2, mode, 0.5));
}
U(f_pad_const, pad_mode(x[0], TG_PAD_CONSTANT))
U(f_pad_reflect, pad_mode(x[0], TG_PAD_REFLECT))
U(f_pad_replicate, pad_mode(x[0], TG_PAD_REPLICATE))
U(f_pad_circular, pad_mode(x[0], TG_PAD_CIRCULAR))
static tg_tensor *f_getitem(tg_tensor *const *x) {
  tg_index idx[2] = {TG_SLS(0, 4, 2), TG_SL(1, 3)};
  return tg_square(tg_getitem(x[0], idx, 2));
}
static tg_tensor *f_getitem_int(tg_tensor *const *x) {
  tg_index idx[2] = {TG_I(-1), TG_SLS(3, 0, -2)};
  return tg_exp(tg_getitem(x[0], idx, 2));
}
static tg_tensor *f_getitem_tensor(tg_tensor *const *x) {
  int32_t iv[5] = {2, 0, 2, 3, 1};
  tg_tensor *ix = tg_from_data(iv, TG_INT32, TG_SHAPE(5));
  tg_index idx[2] = {TG_IT(ix), TG_ALL};
  return tg_square(tg_getitem(x[0], idx, 2));
}
static tg_tensor *f_cat(tg_tensor *const *x) {
  const tg_tensor *ts[3] = {x[0], x[1], x[0]};
  return tg_square(tg_cat(ts, 3, 0));
}
static tg_tensor *f_stack(tg_tensor *const *x) {
  const tg_tensor *ts[2] = {x[0], tg_exp(x[1])};
  return tg_square(tg_stack(ts, 2, 1));
}
U(f_repeat, tg_square(tg_repeat(x[0], TG_SHAPE(2, 1, 3))))
static tg_tensor *f_split(tg_tensor *const *x) {
  tg_tensor *p[3] = {NULL};
  if (tg_split(x[0], 2, 1, p, 3) != 2) return NULL;
  return tg_mul(p[0], tg_exp(p[1]));
}
static tg_tensor *f_chunk(tg_tensor *const *x) {
  tg_tensor *p[3] = {NULL};
  if (tg_chunk(x[0], 3, 0, p, 3) != 3) return NULL;
  return tg_add(tg_mul(p[0], p[2]), tg_square(p[1]));
}
static tg_tensor *f_gather(tg_tensor *const *x) {
  int32_t iv[6] = {0, 3, 3, 1, 2, 0};
  tg_tensor *ix = tg_from_data(iv, TG_INT32, TG_SHAPE(3, 2));
  return tg_square(tg_gather(x[0], 1, ix));
}

U(f_contiguous, tg_exp(tg_contiguous(tg_mul(x[0], x[1]))))
U(f_floor_div, tg_add(tg_div_mode(x[0], x[1], TG_ROUND_FLOOR), tg_mul(x[0], x[1])))
U(f_mod, tg_mod(x[0], x[1]))
U(f_fmod, tg_fmod(x[0], x[1]))
/* composites the nn layer builds: layernorm and a cross entropy through log_softmax and a gather */
static tg_tensor *f_layernorm(tg_tensor *const *x) {
  tg_tensor *mu = tg_mean(x[0], TG_AXES(-1), true);
  tg_tensor *var = tg_var(x[0], TG_AXES(-1), true, 0.0);
  return tg_add(tg_mul(tg_mul(tg_sub(x[0], mu), tg_rsqrt(tg_add(var, tg_const_float(1e-5)))), x[1]), x[2]);
}
static tg_tensor *f_cross_entropy(tg_tensor *const *x) {
  int32_t iv[3] = {2, 0, 3};
  tg_tensor *y = tg_from_data(iv, TG_INT32, TG_SHAPE(3, 1));
  return tg_neg(tg_mean(tg_gather(tg_log_softmax(x[0], -1), 1, y), NULL, 0, false));
}

/* linear algebra and nn */
U(f_matmul, tg_matmul(x[0], x[1]))
U(f_matmul_vec, tg_matmul(x[0], x[1]))
U(f_dot, tg_dot(x[0], x[1]))
static tg_tensor *f_conv(tg_tensor *const *x) {
  return tg_conv2d(x[0], x[1], x[2], 1, NULL, (const int64_t[2]){1, 1}, NULL);
}
static tg_tensor *f_conv_strided(tg_tensor *const *x) {
  return tg_conv2d(x[0], x[1], NULL, 2, (const int64_t[2]){2, 1}, (const int64_t[2]){1, 0}, (const int64_t[2]){1, 2});
}
U(f_maxpool, tg_max_pool2d(x[0], (const int64_t[2]){2, 2}, NULL, NULL, NULL))
U(f_maxpool_pad, tg_max_pool2d(x[0], (const int64_t[2]){3, 3}, (const int64_t[2]){2, 1}, (const int64_t[2]){1, 1}, NULL))
U(f_avgpool, tg_avg_pool2d(x[0], (const int64_t[2]){2, 2}, NULL, NULL, true))
U(f_avgpool_pad, tg_avg_pool2d(x[0], (const int64_t[2]){3, 3}, (const int64_t[2]){1, 2}, (const int64_t[2]){1, 1}, false))
U(f_linear_relu, tg_relu(tg_add(tg_matmul(x[0], x[1]), x[2])))

#define S23 {2, 3}
#define C1(name, fn, lo, hi) {name, fn, 1, {2}, {S23}, lo, hi, 0}
#define C2(name, fn, lo, hi) {name, fn, 2, {2, 1}, {S23, {3}}, lo, hi, 0}
#define R1(name, fn, lo, hi) {name, fn, 1, {3}, {{3, 4, 2}}, lo, hi, 0}

static const GradCase cases[] = {
  C1("neg", f_neg, -2, 2), C1("abs", f_abs, -2, 2), C1("sign", f_sign, -2, 2), C1("exp", f_exp, -2, 2),
  C1("exp2", f_exp2, -2, 2), C1("log", f_log, 0.2, 3), C1("log2", f_log2, 0.2, 3), C1("log10", f_log10, 0.2, 3),
  C1("sqrt", f_sqrt, 0.2, 3), C1("rsqrt", f_rsqrt, 0.2, 3), C1("reciprocal", f_reciprocal, 0.3, 3),
  C1("square", f_square, -2, 2), C1("sin", f_sin, -3, 3), C1("cos", f_cos, -3, 3), C1("tan", f_tan, -1.2, 1.2),
  C1("trunc", f_trunc, -3, 3), C1("floor", f_floor, -3, 3), C1("ceil", f_ceil, -3, 3), C1("round", f_round, -3, 3),
  C1("clamp", f_clamp, -1, 1), C1("relu", f_relu, -2, 2), C1("relu6", f_relu6, -2, 8),
  C1("sigmoid", f_sigmoid, -4, 4), C1("hardsigmoid", f_hardsigmoid, -4, 4), C1("tanh", f_tanh, -3, 3),
  C1("gelu", f_gelu, -3, 3), C1("quick_gelu", f_quick_gelu, -3, 3), C1("silu", f_silu, -3, 3),
  C1("swish", f_swish, -3, 3), C1("hardswish", f_hardswish, -4, 4), C1("softplus", f_softplus, -3, 3),
  C1("softplus beta 2", f_softplus2, -3, 3), C1("softsign", f_softsign, -3, 3), C1("mish", f_mish, -3, 3),
  C1("leaky_relu", f_leaky_relu, -2, 2), C1("elu", f_elu, -2, 2), C1("celu", f_celu, -2, 2), C1("selu", f_selu, -2, 2),
  C1("hardtanh", f_hardtanh, -1, 1), C1("logsigmoid", f_logsigmoid, -4, 4), C1("erf", f_erf, -2, 2),
  C1("sinh", f_sinh, -2, 2), C1("cosh", f_cosh, -2, 2), C1("asin", f_asin, -0.9, 0.9), C1("acos", f_acos, -0.9, 0.9),
  C1("atan", f_atan, -3, 3), C1("asinh", f_asinh, -3, 3), C1("acosh", f_acosh, 1.2, 3), C1("atanh", f_atanh, -0.9, 0.9),
  {"cast float32 and back", f_cast32, 1, {2}, {S23}, -2, 2, 2e-3},
  C2("add broadcast", f_add, -2, 2), C2("sub broadcast", f_sub, -2, 2), C2("mul broadcast", f_mul, -2, 2),
  C2("div broadcast", f_div, 0.5, 2), C2("pow", f_pow, 0.5, 2), C1("pow const 3", f_pow_const, -2, 2),
  C1("pow const 0.5", f_pow_half, 0.2, 2), C1("2 ** x", f_rpow, -2, 2), C2("maximum", f_maximum, -2, 2),
  C2("minimum", f_minimum, -2, 2), C2("where", f_where, -2, 2), C2("copysign", f_copysign, -2, 2),
  C2("logaddexp", f_logaddexp, -3, 3), {"lerp", f_lerp, 3, {2, 2, 1}, {S23, S23, {3}}, -2, 2, 0},
  C2("masked_fill", f_masked_fill, -2, 2), C1("3 / x", f_div_const, 0.5, 2), C1("1 - 2.5x", f_sub_scalar, -2, 2),
  {"chain", f_chain, 2, {2, 2}, {S23, S23}, -2, 2, 0}, C1("x used twice", f_self_mul, -2, 2),
  R1("sum", f_sum, -2, 2), R1("sum axis 0 keepdim", f_sum0k, -2, 2), R1("sum axes 0,2", f_sum01, -2, 2),
  R1("prod", f_prod, 0.5, 1.5), R1("prod axis 1", f_prod1, -2, 2), R1("max", f_max, -2, 2),
  R1("max axis 1 keepdim", f_max1, -2, 2), R1("min axis 0", f_min0, -2, 2), R1("mean", f_mean, -2, 2),
  R1("var", f_var, -2, 2), R1("var all correction 0", f_var0, -2, 2), R1("std", f_std, -2, 2),
  R1("logsumexp", f_logsumexp, -2, 2), R1("logsumexp axis 0 keepdim", f_logsumexp0, -2, 2),
  R1("cumsum", f_cumsum, -2, 2), R1("cumsum axis 0", f_cumsum0, -2, 2), R1("softmax", f_softmax, -2, 2),
  R1("softmax axis 0", f_softmax0, -2, 2), R1("log_softmax", f_log_softmax, -2, 2),
  {"reshape", f_reshape, 2, {2, 1}, {{2, 6}, {3}}, -2, 2, 0},
  R1("permute", f_permute, -2, 2),
  {"transpose", f_transpose, 1, {2}, {{3, 2}}, -2, 2, 0},
  {"expand", f_expand, 2, {2, 3}, {{3, 1}, {2, 3, 4}}, -2, 2, 0},
  {"unsqueeze", f_unsqueeze, 2, {2, 3}, {{2, 3}, {2, 4, 3}}, -2, 2, 0},
  {"squeeze", f_squeeze, 1, {3}, {{2, 1, 3}}, -2, 2, 0},
  {"squeeze all", f_squeeze_all, 1, {4}, {{1, 3, 1, 2}}, -2, 2, 0},
  {"flatten", f_flatten, 2, {3, 1}, {{2, 3, 2}, {6}}, -2, 2, 0},
  R1("flip", f_flip, -2, 2),
  {"shrink", f_shrink, 1, {2}, {{4, 3}}, -2, 2, 0},
  {"pad constant", f_pad_const, 1, {2}, {{3, 4}}, -2, 2, 0},
  {"pad reflect", f_pad_reflect, 1, {2}, {{3, 4}}, -2, 2, 0},
  {"pad replicate", f_pad_replicate, 1, {2}, {{3, 4}}, -2, 2, 0},
  {"pad circular", f_pad_circular, 1, {2}, {{3, 4}}, -2, 2, 0},
  {"getitem slices with step", f_getitem, 1, {2}, {{5, 4}}, -2, 2, 0},
  {"getitem int, negative step", f_getitem_int, 1, {2}, {{3, 4}}, -2, 2, 0},
  {"getitem tensor index", f_getitem_tensor, 1, {2}, {{4, 3}}, -2, 2, 0},
  {"cat", f_cat, 2, {2, 2}, {{2, 3}, {1, 3}}, -2, 2, 0},
  {"stack", f_stack, 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0},
  {"repeat", f_repeat, 1, {2}, {{2, 2}}, -2, 2, 0},
  {"split", f_split, 1, {2}, {{2, 4}}, -2, 2, 0},
  {"chunk", f_chunk, 1, {2}, {{3, 2}}, -2, 2, 0},
  {"gather", f_gather, 1, {2}, {{3, 4}}, -2, 2, 0},
  {"matmul batched broadcast", f_matmul, 2, {3, 2}, {{2, 3, 4}, {4, 2}}, -2, 2, 0},
  {"matmul vector", f_matmul_vec, 2, {1, 2}, {{3}, {3, 4}}, -2, 2, 0},
  {"dot", f_dot, 2, {2, 1}, {{2, 3}, {3}}, -2, 2, 0},
  {"conv2d padding + bias", f_conv, 3, {4, 4, 1}, {{1, 2, 5, 5}, {3, 2, 3, 3}, {3}}, -1, 1, 0},
  {"conv2d stride, dilation, groups", f_conv_strided, 2, {4, 4}, {{2, 4, 5, 6}, {2, 2, 2, 2}}, -1, 1, 0},
  {"max_pool2d", f_maxpool, 1, {4}, {{1, 2, 4, 4}}, -2, 2, 0},
  {"max_pool2d padding, stride", f_maxpool_pad, 1, {4}, {{1, 1, 5, 6}}, -2, 2, 0},
  {"avg_pool2d", f_avgpool, 1, {4}, {{1, 2, 4, 4}}, -2, 2, 0},
  {"avg_pool2d padding, no count pad", f_avgpool_pad, 1, {4}, {{2, 1, 5, 4}}, -2, 2, 0},
  {"contiguous", f_contiguous, 2, {2, 2}, {S23, S23}, -1, 1, 0},
  C2("floor division", f_floor_div, 0.5, 3), C2("mod", f_mod, 0.5, 3), C2("fmod", f_fmod, 0.5, 3),
  {"layernorm", f_layernorm, 3, {2, 1, 1}, {{3, 5}, {5}, {5}}, -2, 2, 0},
  {"cross entropy", f_cross_entropy, 1, {2}, {{3, 4}}, -2, 2, 0},
  {"linear + relu", f_linear_relu, 3, {2, 2, 1}, {{3, 4}, {4, 5}, {5}}, -2, 2, 0},
};

/* ------------------------------------------------------------------------------------------- kernel counts */

/* The kernels the scheduler makes for these handles together (nothing runs). */
static int kernels_for(tg_tensor *const *ts, size_t n) {
  UOpScope sc = uop_scope_begin();
  UOp *roots[4];
  for (size_t i = 0; i < n; i++) roots[i] = ts[i] ? ts[i]->uop : NULL;
  int k = -1;
  bool ok = true;
  for (size_t i = 0; i < n; i++) ok = ok && roots[i];
  UOp *lin = ok ? sched_kernels(uop_sink(roots, n)) : NULL;
  if (lin) k = (int)lin->nsrc;
  uop_scope_end(sc);
  return k;
}

/* tinygrad's counts at the reference commit (DEV=CPU, inputs realized; measured with its linear_with_vars) */
static void check_kernel_counts(void) {
  tg_scope s = tg_scope_begin();
  tg_tensor *a = tg_empty(TG_SHAPE(16, 32), TG_FLOAT32), *w = tg_empty(TG_SHAPE(32, 64), TG_FLOAT32);
  tg_requires_grad(a, true);
  tg_requires_grad(w, true);
  tg_tensor *loss = tg_sum(tg_relu(tg_matmul(a, w)), NULL, 0, false);
  CHECK(tg_backward(loss) == TG_OK);
  tg_tensor *lw[2] = {loss, tg_grad(w)};
  int k = kernels_for(lw, 2);
  CHECK_MSG(k == 3, "fwd+bwd of (a@w).relu().sum() (loss, w.grad): %d kernels, tinygrad 3 (%s)", k, tg_last_error());

  tg_tensor *x = tg_empty(TG_SHAPE(4, 12, 64, 64), TG_FLOAT32);
  tg_requires_grad(x, true);
  CHECK(tg_backward(tg_sum(tg_softmax(x, -1), NULL, 0, false)) == TG_OK);
  tg_tensor *xg = tg_grad(x);
  k = kernels_for(&xg, 1);
  CHECK_MSG(k == 1, "softmax backward: %d kernels, 1 with the row rule (FUSE_ROWS): every reduce is per row", k);
  test_setenv("FUSE_ROWS", "0"); /* no cache clear: the schedule cache key includes the knob */
  k = kernels_for(&xg, 1);
  CHECK_MSG(k == 4, "softmax backward: %d kernels, tinygrad 4", k);
  test_unsetenv("FUSE_ROWS");

  tg_tensor *y = tg_empty(TG_SHAPE(4, 12, 64, 64), TG_FLOAT32);
  tg_requires_grad(y, true);
  CHECK(tg_backward(tg_sum(tg_logsumexp(y, -1, false), NULL, 0, false)) == TG_OK);
  tg_tensor *yg = tg_grad(y);
  k = kernels_for(&yg, 1);
  CHECK_MSG(k == 1, "logsumexp backward: %d kernels, 1 with the row rule (FUSE_ROWS)", k);
  test_setenv("FUSE_ROWS", "0");
  k = kernels_for(&yg, 1);
  CHECK_MSG(k == 3, "logsumexp backward: %d kernels, tinygrad 3", k);
  test_unsetenv("FUSE_ROWS");

  tg_tensor *m1 = tg_empty(TG_SHAPE(64, 64), TG_FLOAT32), *m2 = tg_empty(TG_SHAPE(64, 64), TG_FLOAT32);
  tg_requires_grad(m1, true);
  CHECK(tg_backward(tg_sum(tg_matmul(m2, m1), NULL, 0, false)) == TG_OK);
  tg_tensor *mg = tg_contiguous(tg_grad(m1));
  k = kernels_for(&mg, 1);
  CHECK_MSG(k == 1, "y.matmul(x).sum() backward, x.grad.contiguous(): %d kernels, tinygrad 1", k);

  tg_tensor *img = tg_empty(TG_SHAPE(2, 3, 64, 64), TG_FLOAT32), *cw = tg_empty(TG_SHAPE(16, 3, 3, 3), TG_FLOAT32);
  tg_requires_grad(img, true);
  tg_requires_grad(cw, true);
  tg_tensor *ret = tg_mean(tg_relu(tg_conv2d(img, cw, NULL, 1, NULL, NULL, NULL)), NULL, 0, false);
  CHECK(tg_backward(ret) == TG_OK);
  tg_tensor *cv[3] = {ret, tg_grad(img), tg_grad(cw)};
  k = kernels_for(cv, 3);
  CHECK_MSG(k == 5, "conv2d(img, w).relu().mean() fwd+bwd (ret, img.grad, w.grad): %d kernels, tinygrad 5", k);
  sched_cache_clear();
  tg_scope_end(s);
}

/* ------------------------------------------------------------------------------------- API and error rules */

static bool err_has(const char *needle) { return strstr(tg_last_error(), needle) != NULL; }

static void check_errors(void) {
  tg_scope s = tg_scope_begin();
  double v[6] = {1, 2, 3, 4, 5, 6};
  tg_tensor *x = f64(v, TG_SHAPE(2, 3)), *loss = tg_sum(tg_mul(x, x), NULL, 0, false), *out[2] = {NULL, NULL};
  /* a weak tensor (a C scalar) has no storage: no gradient with respect to it */
  tg_tensor *weak = tg_const_float(2.0), *lw = tg_sum(tg_mul(x, weak), NULL, 0, false);
  const tg_tensor *wrt_weak[1] = {weak};
  CHECK(tg_gradient(lw, wrt_weak, 1, out) == TG_ERR_INVALID_ARGUMENT && out[0] == NULL);
  CHECK_MSG(err_has("weak"), "weak target: %s", tg_last_error());
  CHECK(tg_requires_grad(weak, true) != TG_OK && err_has("weak"));
  /* tinygrad test_const_target_raise: t = Tensor(2.0) (weak); (t * 2.0).gradient(t) raises */
  tg_tensor *t2 = tg_const_float(2.0);
  const tg_tensor *wrt_t2[1] = {t2};
  CHECK(tg_gradient(tg_mul(t2, tg_const_float(2.0)), wrt_t2, 1, out) != TG_OK && out[0] == NULL && err_has("weak"));
  /* a strong device-less constant is a valid target of tg_gradient (tinygrad), but cannot hold a grad */
  tg_tensor *c = tg_scalar(3.0, TG_FLOAT64), *lc = tg_sum(tg_mul(x, c), NULL, 0, false);
  CHECK(tg_device(c) == NULL);
  const tg_tensor *wrt_c[1] = {c};
  double cg = 0;
  CHECK(tg_gradient(lc, wrt_c, 1, out) == TG_OK && tg_item_double(out[0], &cg) == TG_OK && cg == 21.0);
  CHECK(tg_requires_grad(c, true) != TG_OK && err_has("storage"));
  /* only floats have gradients */
  int32_t iv[2] = {1, 2};
  tg_tensor *xi = tg_from_data(iv, TG_INT32, TG_SHAPE(2));
  const tg_tensor *wrt_i[1] = {xi};
  CHECK(tg_gradient(tg_sum(tg_cast(xi, TG_FLOAT64), NULL, 0, false), wrt_i, 1, out) != TG_OK && err_has("float"));
  CHECK(tg_requires_grad(xi, true) != TG_OK && !tg_get_requires_grad(xi));
  const tg_tensor *wrt_x[1] = {x};
  CHECK(tg_gradient(tg_sum(xi, NULL, 0, false), wrt_x, 1, out) != TG_OK && err_has("float"));
  /* the root must be 0-d unless a seed gradient is given, and the seed must have the root's shape */
  tg_tensor *sq = tg_mul(x, x);
  CHECK(tg_gradient(sq, wrt_x, 1, out) != TG_OK && err_has("scalar"));
  CHECK(tg_backward(sq) != TG_OK && err_has("scalar"));
  tg_tensor *seed_bad = tg_ones(TG_SHAPE(3), TG_FLOAT64), *seed = tg_full(TG_SHAPE(2, 3), 0.5, TG_FLOAT64);
  CHECK(tg_gradient_with_grad(sq, seed_bad, wrt_x, 1, out) != TG_OK && err_has("shape"));
  CHECK(tg_gradient_with_grad(sq, seed, wrt_x, 1, out) == TG_OK && out[0]);
  double g[6];
  CHECK(host_f64(out[0], g, 6));
  for (int i = 0; i < 6; i++) CHECK_NEAR(g[i], v[i], 1e-12); /* d(x*x)/dx * 0.5 */
  /* NULL anywhere */
  tg_clear_error();
  CHECK(tg_gradient(NULL, wrt_x, 1, out) != TG_OK && out[0] == NULL && err_has("NULL"));
  tg_clear_error();
  const tg_tensor *wrt_null[1] = {NULL};
  CHECK(tg_gradient(loss, wrt_null, 1, out) != TG_OK && err_has("NULL"));
  tg_clear_error();
  CHECK(tg_gradient(loss, NULL, 1, out) != TG_OK);
  CHECK(tg_backward(NULL) != TG_OK);
  CHECK(tg_requires_grad(NULL, true) != TG_OK);
  CHECK(tg_grad(NULL) == NULL && !tg_get_requires_grad(NULL) && tg_detach(NULL) == NULL);
  tg_zero_grad(NULL);
  /* no path from the root: zeros, as tinygrad (a detached use is no path either) */
  tg_tensor *other = f64(v, TG_SHAPE(2, 3));
  const tg_tensor *wrt_o[2] = {other, x};
  tg_tensor *ld = tg_sum(tg_mul(tg_detach(x), other), NULL, 0, false);
  CHECK(tg_gradient(loss, wrt_o, 2, out) == TG_OK && out[0] && out[1]);
  CHECK(host_f64(out[0], g, 6));
  for (int i = 0; i < 6; i++) CHECK_NEAR(g[i], 0, 0);
  CHECK(tg_gradient(ld, wrt_o, 2, out) == TG_OK);
  double gx[6];
  CHECK(host_f64(out[0], g, 6) && host_f64(out[1], gx, 6));
  for (int i = 0; i < 6; i++) CHECK(g[i] == v[i] && gx[i] == 0);
  /* the gradient of the root itself is the seed */
  const tg_tensor *wrt_l[1] = {loss};
  tg_tensor *lr = tg_contiguous(loss);
  CHECK(tg_gradient(loss, wrt_l, 1, out) == TG_OK);
  double one = 0;
  CHECK(tg_item_double(out[0], &one) == TG_OK && one == 1.0);
  TG_UNUSED(lr);
  tg_scope_end(s);
}

static void check_backward(void) {
  tg_scope s = tg_scope_begin();
  double v[4] = {1, -2, 3, 0.5}, g[4];
  tg_tensor *x = f64(v, TG_SHAPE(4)), *y = f64(v, TG_SHAPE(4)), *z = f64(v, TG_SHAPE(4));
  CHECK(tg_requires_grad(x, true) == TG_OK && tg_get_requires_grad(x));
  CHECK(tg_requires_grad(z, true) == TG_OK);
  CHECK(tg_grad(x) == NULL);
  /* loss = sum(x*x*y): x.grad = 2xy; y does not require grad; z is not in the graph */
  tg_tensor *loss = tg_sum(tg_mul(tg_mul(x, x), y), NULL, 0, false);
  CHECK(tg_backward(loss) == TG_OK);
  tg_tensor *gx = tg_grad(x);
  CHECK(gx != NULL && tg_grad(y) == NULL && tg_grad(z) == NULL);
  CHECK(host_f64(gx, g, 4));
  for (int i = 0; i < 4; i++) CHECK_NEAR(g[i], 2 * v[i] * v[i], 1e-12);
  /* a second backward accumulates, in the same handle */
  tg_tensor *loss2 = tg_sum(tg_mul(x, y), NULL, 0, false);
  CHECK(tg_backward(loss2) == TG_OK);
  CHECK(tg_grad(x) == gx);
  CHECK(host_f64(gx, g, 4));
  for (int i = 0; i < 4; i++) CHECK_NEAR(g[i], 2 * v[i] * v[i] + v[i], 1e-12);
  /* zero_grad: the next backward starts from nothing */
  tg_zero_grad(x);
  CHECK(tg_grad(x) == NULL);
  CHECK(tg_backward(loss2) == TG_OK && host_f64(tg_grad(x), g, 4));
  for (int i = 0; i < 4; i++) CHECK_NEAR(g[i], v[i], 1e-12);
  /* a constant gradient (of a plain sum) gets storage like tinygrad's clone */
  tg_zero_grad(x);
  CHECK(tg_backward(tg_sum(x, NULL, 0, false)) == TG_OK && tg_device(tg_grad(x)) != NULL);
  CHECK(host_f64(tg_grad(x), g, 4));
  for (int i = 0; i < 4; i++) CHECK(g[i] == 1.0);
  /* detach stops the gradient: d/dx sum(x * detach(x)) = detach(x) */
  tg_zero_grad(x);
  CHECK(tg_backward(tg_sum(tg_mul(x, tg_detach(x)), NULL, 0, false)) == TG_OK && host_f64(tg_grad(x), g, 4));
  for (int i = 0; i < 4; i++) CHECK_NEAR(g[i], v[i], 1e-12);
  /* unmarking keeps the grad; the next backward leaves it alone */
  CHECK(tg_requires_grad(x, false) == TG_OK && !tg_get_requires_grad(x) && tg_grad(x) != NULL);
  CHECK(tg_backward(tg_sum(tg_mul(x, x), NULL, 0, false)) == TG_OK && host_f64(tg_grad(x), g, 4));
  for (int i = 0; i < 4; i++) CHECK_NEAR(g[i], v[i], 1e-12);
  /* a failed backward leaves every grad as it was */
  CHECK(tg_requires_grad(x, true) == TG_OK);
  CHECK(tg_backward(tg_mul(x, x)) != TG_OK && host_f64(tg_grad(x), g, 4));
  for (int i = 0; i < 4; i++) CHECK_NEAR(g[i], v[i], 1e-12);
  /* a grad kept past its tensor's release stays valid; the tensor's own reference goes with it */
  size_t live = tg_live_tensors();
  tg_tensor *gk = tg_retain(tg_grad(x));
  tg_release(tg_retain(x));
  CHECK(host_f64(gk, g, 4));
  tg_release(gk);
  CHECK(tg_live_tensors() == live);
  tg_scope_end(s);
  /* a tensor released with a grad frees it (no leak) */
  size_t before = tg_live_tensors();
  tg_tensor *p = f64(v, TG_SHAPE(4));
  tg_requires_grad(p, true);
  tg_tensor *ep = tg_exp(p), *lp = tg_sum(ep, NULL, 0, false);
  CHECK(tg_backward(lp) == TG_OK && tg_grad(p));
  tg_release(lp);
  tg_release(ep);
  tg_release(p);
  CHECK_EQ_INT(tg_live_tensors(), before);
  /* a grad created inside a scope survives the scope: it belongs to its tensor */
  p = f64(v, TG_SHAPE(4));
  tg_requires_grad(p, true);
  tg_scope s2 = tg_scope_begin();
  CHECK(tg_backward(tg_sum(tg_mul(p, p), NULL, 0, false)) == TG_OK);
  tg_scope_end(s2);
  CHECK(tg_grad(p) && host_f64(tg_grad(p), g, 4));
  for (int i = 0; i < 4; i++) CHECK_NEAR(g[i], 2 * v[i], 1e-12);
  tg_release(p);
  CHECK_EQ_INT(tg_live_tensors(), before);
}

/* ------------------------------------------------------------------------- rules off the finite-difference path */

static bool vals_are(tg_tensor *t, const double *want, int n) {
  double got[16];
  if (!host_f64(t, got, n)) return false;
  for (int i = 0; i < n; i++)
    if (!(got[i] == want[i] || (isinf(got[i]) && isinf(want[i]) && (got[i] > 0) == (want[i] > 0)))) {
      fprintf(stderr, "  value %d: %.17g, expected %.17g\n", i, got[i], want[i]);
      return false;
    }
  return true;
}

static tg_tensor *grad1(tg_tensor *loss, tg_tensor *wrt) {
  tg_tensor *out[1] = {NULL};
  const tg_tensor *w[1] = {wrt};
  return tg_gradient(loss, w, 1, out) == TG_OK ? out[0] : NULL;
}

/* the subgradient choices of tinygrad's rules, exactly */
static void check_rule_values(void) {
  tg_scope s = tg_scope_begin();
  /* MAX(x, y): half the gradient to each on a tie */
  double xv[3] = {1, 3, 2}, yv[3] = {1, 2, 5};
  tg_tensor *x = f64(xv, TG_SHAPE(3)), *y = f64(yv, TG_SHAPE(3));
  tg_tensor *lm = tg_sum(tg_maximum(x, y), NULL, 0, false);
  CHECK(vals_are(grad1(lm, x), (const double[]){0.5, 1, 0}, 3));
  CHECK(vals_are(grad1(lm, y), (const double[]){0.5, 0, 1}, 3));
  /* REDUCE MAX: the maxima share the gradient */
  double tv[4] = {1, 3, 3, -1};
  tg_tensor *t = f64(tv, TG_SHAPE(4));
  CHECK(vals_are(grad1(tg_max(t, NULL, 0, false), t), (const double[]){0, 0.5, 0.5, 0}, 4));
  CHECK(vals_are(grad1(tg_min(t, NULL, 0, false), t), (const double[]){0, 0, 0, 1}, 4));
  /* REDUCE MUL: zero-safe (one zero: the product of the others goes to it; two zeros: nothing) */
  double p1[3] = {2, 0, 3}, p2[3] = {0, 0, 3}, p3[3] = {2, -1, 3};
  tg_tensor *a1 = f64(p1, TG_SHAPE(3)), *a2 = f64(p2, TG_SHAPE(3)), *a3 = f64(p3, TG_SHAPE(3));
  CHECK(vals_are(grad1(tg_prod(a1, NULL, 0, false), a1), (const double[]){0, 6, 0}, 3));
  CHECK(vals_are(grad1(tg_prod(a2, NULL, 0, false), a2), (const double[]){0, 0, 0}, 3));
  CHECK(vals_are(grad1(tg_prod(a3, NULL, 0, false), a3), (const double[]){-3, 6, -2}, 3));
  /* POW at a zero base: d/db 0^3 = 0, d/db b^0 = 0; d/de at b = 0 is 0 for e >= 0 and -inf for e < 0 */
  double bv[2] = {0, 2}, ev[2] = {3, 0}, en[2] = {-1, 1};
  tg_tensor *b = f64(bv, TG_SHAPE(2)), *e = f64(ev, TG_SHAPE(2)), *e2 = f64(en, TG_SHAPE(2));
  tg_tensor *lp = tg_sum(tg_pow(b, e), NULL, 0, false);
  CHECK(vals_are(grad1(lp, b), (const double[]){0, 0}, 2));
  CHECK(vals_are(grad1(lp, e), (const double[]){0, log(2.0)}, 2));
  CHECK(vals_are(grad1(tg_sum(tg_pow(b, e2), NULL, 0, false), e2), (const double[]){-INFINITY, 2 * log(2.0)}, 2));
  /* relu at 0 and abs at 0: tinygrad's where-based choices */
  double zv[3] = {0, -1, 2};
  tg_tensor *z = f64(zv, TG_SHAPE(3));
  CHECK(vals_are(grad1(tg_sum(tg_relu(z), NULL, 0, false), z), (const double[]){0, 0, 1}, 3));
  /* assign: the gradient flows through AFTER(buffer, STORE(buffer, value)) to the value */
  tg_tensor *buf = tg_empty(TG_SHAPE(3), TG_FLOAT64);
  CHECK(tg_assign(buf, tg_mul(x, tg_const_float(2))) == TG_OK);
  tg_tensor *la = tg_sum(tg_mul(buf, x), NULL, 0, false); /* = sum(2x^2) */
  CHECK(vals_are(grad1(la, x), (const double[]){4, 12, 8}, 3));
  tg_scope_end(s);
}

/* rules the Tensor API does not reach, on hand-built graphs */
static void check_rules_direct(void) {
  CHECK_EQ_INT(pm_rule_count(grad_rules()), 32); /* tinygrad's 31 and CUSTOM_GRAD */
  tg_scope s = tg_scope_begin();
  double av[3] = {1, 2, 3}, gv[6] = {1, 2, 3, 4, 5, 6};
  tg_tensor *ta = f64(av, TG_SHAPE(3)), *tb = f64(av, TG_SHAPE(3)), *tg = f64(gv, TG_SHAPE(2, 3));
  mix_ctx_begin("test_grad");
  UOp *a = tensor_in(ta, 1), *b = tensor_in(tb, 2), *g = tensor_in(tg, 3), *out[2] = {NULL, NULL}, *ab[2] = {a, b};
  /* STACK: row i of the gradient to element i */
  UOp *st = uop_new(TG_OP_STACK, NULL, ab, 2, arg_none());
  CHECK(grad_compute(st, g, ab, 2, out) && out[0] && out[1]);
  mix_ctx_begin("test_grad");
  tg_tensor *o0 = tensor_ctx_end(out[0]);
  mix_ctx_begin("test_grad");
  tg_tensor *o1 = tensor_ctx_end(out[1]);
  /* TUPLE: its gradient is routed element by element */
  UOp *tup = uop_new(TG_OP_TUPLE, DT_VOID, ab, 2, arg_none()), *gg[2] = {g, a};
  UOp *gtup = uop_new(TG_OP_TUPLE, DT_VOID, gg, 2, arg_none());
  UOp *three[2] = {a, a};
  CHECK(grad_compute(tup, uop_new(TG_OP_TUPLE, DT_VOID, three, 2, arg_none()), ab, 2, out) && out[0] == a && out[1] == a);
  TG_UNUSED(gtup);
  /* COPY: the gradient is copied back to the source's device */
  UOp *cp = uop_new(TG_OP_COPY, a->dtype, &a, 1, arg_str("CPU"));
  CHECK(grad_compute(cp, b, &a, 1, out) && out[0] && out[0]->op == TG_OP_COPY && out[0]->src[0] == b);
  /* CONTIGUOUS_BACKWARD: the gradient is made contiguous */
  UOp *cb = uop_alu1(TG_OP_CONTIGUOUS_BACKWARD, a);
  CHECK(grad_compute(cb, uop_add(b, b), &a, 1, out) && out[0] && out[0]->op == TG_OP_CONTIGUOUS);
  /* BITCAST: no gradient, so no path */
  UOp *bc = mix_cast(mix_bitcast(a, DT_INT64), DT_FLOAT64);
  CHECK(grad_compute(bc, b, &a, 1, out) && out[0] == NULL);
  /* CAST: back to the source dtype */
  UOp *c32 = mix_cast(a, DT_FLOAT32);
  CHECK(grad_compute(c32, mix_cast(b, DT_FLOAT32), &a, 1, out) && out[0] && out[0]->dtype == DT_FLOAT64);
  /* an op without a rule on the path is an error naming it */
  UOp *fd = mix_div(mix_cast(a, DT_INT32), mix_cast(b, DT_INT32), TG_ROUND_FLOOR);
  tg_clear_error();
  CHECK(!grad_compute(mix_cast(fd, DT_FLOAT64), b, &a, 1, out) && out[0] == NULL);
  CHECK_MSG(strstr(tg_last_error(), "FLOORDIV") != NULL, "no rule: %s", tg_last_error());
  mix_ctx_end();
  CHECK(vals_are(o0, (const double[]){1, 2, 3}, 3) && vals_are(o1, (const double[]){4, 5, 6}, 3));
  tg_scope_end(s);
}

/* a training loop's autograd state stays flat: handles and nodes do not grow with the steps */
static void check_steady_loop(void) {
  double wv[12], xv[8], before = 0, after = 0;
  for (int i = 0; i < 12; i++) wv[i] = urand(-1, 1);
  for (int i = 0; i < 8; i++) xv[i] = urand(-1, 1);
  tg_tensor *w = f64(wv, TG_SHAPE(4, 3)), *x = f64(xv, TG_SHAPE(2, 4));
  CHECK(tg_requires_grad(w, true) == TG_OK);
  size_t live5 = 0, nodes5 = 0;
  for (int step = 0; step < 40; step++) {
    tg_scope s = tg_scope_begin();
    tg_tensor *loss = tg_sum(tg_square(tg_relu(tg_matmul(x, w))), NULL, 0, false);
    bool ok = tg_backward(loss) == TG_OK;
    tg_tensor *nw = tg_sub(w, tg_mul(tg_grad(w), tg_const_float(0.05)));
    tg_tensor *pair[2] = {loss, w};
    ok = ok && tg_assign(w, nw) == TG_OK && tg_realize_many(pair, 2) == TG_OK;
    double l = NAN;
    ok = ok && tg_item_double(loss, &l) == TG_OK;
    if (step == 0) before = l;
    after = l;
    tg_zero_grad(w);
    tg_scope_end(s);
    if (!ok) {
      CHECK_MSG(ok, "training step %d failed: %s", step, tg_last_error());
      break;
    }
    if (step == 5) live5 = tg_live_tensors(), nodes5 = uop_live_count();
  }
  CHECK_MSG(after < before, "loss went from %g to %g", before, after);
  CHECK_EQ_INT(tg_live_tensors(), live5);
  CHECK_MSG(uop_live_count() <= nodes5, "nodes grew from %zu to %zu", nodes5, uop_live_count());
  tg_release(w);
  tg_release(x);
}

/* tinygrad's implicit-broadcast gradient tests (seed): an ALU with a bare ()-shape source and no EXPAND in the
 * graph; the broadcast-sum rule reduces each edge's gradient to its source's shape */
static void check_implicit_broadcast(void) {
  tg_scope s = tg_scope_begin();
  bool cv[3] = {true, false, true};
  double xv[3] = {1, 2, 3};
  tg_tensor *cond = tg_from_data(cv, TG_BOOL, TG_SHAPE(3)), *x = f64(xv, TG_SHAPE(3));
  tg_tensor *w = tg_scalar(4.0, TG_FLOAT64), *w2 = tg_scalar(2.0, TG_FLOAT64), *p = tg_scalar(0.5, TG_FLOAT64);
  mix_ctx_begin("test_grad");
  UOp *where = uop_alu3(TG_OP_WHERE, tensor_in(cond, 1), tensor_in(x, 2), tensor_in(w, 3));
  UOp *mul = uop_alu2(TG_OP_MUL, tensor_in(x, 2), tensor_in(w2, 4));
  UOp *sp = mix_sin(tensor_in(p, 5));
  UOp *z = mix_add(mix_sum(uop_alu2(TG_OP_MUL, tensor_in(x, 2), sp), NULL, 0, false, NULL), sp);
  mix_ctx_begin("test_grad");
  tg_tensor *hw = tensor_ctx_end(where);
  mix_ctx_begin("test_grad");
  tg_tensor *hm = tensor_ctx_end(mul);
  mix_ctx_begin("test_grad");
  tg_tensor *hz = tensor_ctx_end(z);
  mix_ctx_end();
  CHECK(hw && hm && hz && hm->uop->src[1] == w2->uop);
  tg_tensor *dw = grad1(tg_sum(hw, NULL, 0, false), w);
  double v = 0;
  CHECK(dw && tg_ndim(dw) == 0 && tg_item_double(dw, &v) == TG_OK && v == 1.0);
  tg_tensor *dw2 = grad1(tg_sum(hm, NULL, 0, false), w2);
  CHECK(dw2 && tg_ndim(dw2) == 0 && tg_item_double(dw2, &v) == TG_OK && v == 6.0);
  tg_tensor *dp = grad1(hz, p);
  CHECK(dp && tg_item_double(dp, &v) == TG_OK);
  CHECK_NEAR(v, 7 * cos(0.5), 1e-12);
  tg_scope_end(s);
}

/* --------------------------------------------------------------------------- graph parity with tinygrad */

/* the canonical graph text of tools/gen_grad_graph_cases.py (the form of gen_tensor_graph_cases.py) */
static void canon_arg(StrBuf *b, const UOp *u, int64_t *slots, int *nslots) {
  if (u->op == TG_OP_CONST) {
    Const c = u->arg.c;
    if (c.kind == CK_BOOL) sb_puts(b, c.b ? "True" : "False");
    else if (c.kind == CK_INT) sb_printf(b, "%lld", (long long)c.i);
    else if (c.kind == CK_FLOAT && isnan(c.f)) sb_puts(b, "nan");
    else if (c.kind == CK_FLOAT && isinf(c.f)) sb_puts(b, c.f > 0 ? "inf" : "-inf");
    else if (c.kind == CK_FLOAT) sb_printf(b, "%.17g", c.f);
    else sb_puts(b, "?");
  } else if ((u->op == TG_OP_BUFFER || u->op == TG_OP_PARAM) && u->arg.kind == ARG_PARAM) {
    int k = 0;
    while (k < *nslots && slots[k] != u->arg.param->slot) k++;
    if (k == *nslots && *nslots < 64) slots[(*nslots)++] = u->arg.param->slot;
    sb_printf(b, "p%d:%s:%s", k, u->arg.param->dtype->name, u->arg.param->device);
  } else if (u->op == TG_OP_REDUCE) {
    sb_printf(b, "%s,%d", uop_op_name((TgOp)u->arg.red.op), u->arg.red.naxes);
  } else if (u->op == TG_OP_PERMUTE || u->op == TG_OP_FLIP) {
    for (uint32_t k = 0; k < u->arg.len; k++) sb_printf(b, "%s%lld", k ? "," : "", (long long)u->arg.ints[k]);
  } else {
    sb_putc(b, '-');
  }
}

static char *graph_text(UOp *root) {
  UOpVec order = {0};
  uop_toposort(root, NULL, NULL, &order);
  UOpMap idx;
  uopmap_init(&idx);
  int64_t slots[64];
  int nslots = 0;
  StrBuf b;
  sb_init(&b);
  for (size_t i = 0; i < order.len; i++) {
    UOp *u = order.data[i];
    uopmap_put(&idx, u, (void *)(uintptr_t)i);
    sb_printf(&b, "%s%s %s ", i ? ";" : "", uop_op_name(uop_op(u)), u->dtype->name);
    canon_arg(&b, u, slots, &nslots);
    sb_putc(&b, ' ');
    if (!u->nsrc) sb_putc(&b, '-');
    for (uint32_t k = 0; k < u->nsrc; k++) {
      void **v = uopmap_get(&idx, u->src[k]);
      sb_printf(&b, "%s%zu", k ? "," : "", v ? (size_t)(uintptr_t)*v : (size_t)9999);
    }
  }
  uopmap_free(&idx);
  tg_vec_free(&order);
  return sb_take(&b);
}

#define EF(...) tg_empty(TG_SHAPE(__VA_ARGS__), TG_FLOAT32)
#define SUMALL(t) tg_sum((t), NULL, 0, false)

/* the generator's expressions, by name: fills the inputs, returns the loss */
static tg_tensor *graph_case(const char *name, tg_tensor **in, int *nin) {
  *nin = 1;
  if (!strcmp(name, "mul_sum")) { *nin = 2; in[0] = EF(4, 3); in[1] = EF(4, 3); return SUMALL(tg_mul(in[0], in[1])); }
  if (!strcmp(name, "add_bcast")) { *nin = 2; in[0] = EF(4, 3); in[1] = EF(3); return SUMALL(tg_add(in[0], in[1])); }
  if (!strcmp(name, "matmul_relu")) {
    *nin = 2; in[0] = EF(4, 8); in[1] = EF(8, 5);
    return SUMALL(tg_relu(tg_matmul(in[0], in[1])));
  }
  if (!strcmp(name, "softmax")) { in[0] = EF(4, 6); return SUMALL(tg_softmax(in[0], -1)); }
  if (!strcmp(name, "log_softmax")) { in[0] = EF(4, 6); return SUMALL(tg_mul(tg_log_softmax(in[0], 1), tg_const_int(2))); }
  if (!strcmp(name, "exp_log_sqrt")) {
    in[0] = EF(5);
    return SUMALL(tg_add(tg_exp(in[0]), tg_mul(tg_log(in[0]), tg_sqrt(in[0]))));
  }
  if (!strcmp(name, "sin_cos")) { in[0] = EF(5); return SUMALL(tg_mul(tg_sin(in[0]), tg_cos(in[0]))); }
  if (!strcmp(name, "reciprocal_div")) { *nin = 2; in[0] = EF(3, 2); in[1] = EF(3, 2); return SUMALL(tg_div(in[0], in[1])); }
  if (!strcmp(name, "max_reduce")) { in[0] = EF(4, 6); return SUMALL(tg_max(in[0], TG_AXES(1), false)); }
  if (!strcmp(name, "min_reduce")) { in[0] = EF(4, 6); return SUMALL(tg_min(in[0], NULL, 0, false)); }
  if (!strcmp(name, "prod")) { in[0] = EF(4, 3); return SUMALL(tg_prod(in[0], TG_AXES(0), false)); }
  if (!strcmp(name, "maximum")) { *nin = 2; in[0] = EF(4); in[1] = EF(4); return SUMALL(tg_maximum(in[0], in[1])); }
  if (!strcmp(name, "pow")) { *nin = 2; in[0] = EF(4); in[1] = EF(4); return SUMALL(tg_pow(in[0], in[1])); }
  if (!strcmp(name, "where")) {
    *nin = 2; in[0] = EF(4); in[1] = EF(4);
    return SUMALL(tg_where(tg_gt(in[0], in[1]), in[0], tg_mul(in[1], tg_const_int(2))));
  }
  if (!strcmp(name, "mean_var")) {
    in[0] = EF(4, 6);
    return SUMALL(tg_add(tg_mean(in[0], TG_AXES(1), false), SUMALL(tg_var(in[0], TG_AXES(0), false, 1.0))));
  }
  if (!strcmp(name, "movement")) {
    in[0] = EF(6, 2);
    tg_tensor *t = tg_flip(tg_reshape(tg_permute(in[0], TG_AXES(1, 0)), TG_SHAPE(2, 6)), TG_AXES(1));
    t = tg_pad(t, (const int64_t[]){1, 0, 0, 2}, 2, TG_PAD_CONSTANT, 0.0);
    t = tg_shrink(t, (const int64_t[]){0, 2, 1, 7}, 2);
    return SUMALL(tg_expand(t, TG_SHAPE(3, 2, 6)));
  }
  if (!strcmp(name, "cast_half")) { in[0] = EF(5); return SUMALL(tg_cast(tg_cast(in[0], TG_FLOAT16), TG_FLOAT32)); }
  if (!strcmp(name, "conv2d")) {
    *nin = 2; in[0] = EF(1, 2, 5, 5); in[1] = EF(3, 2, 3, 3);
    return tg_mean(tg_relu(tg_conv2d(in[0], in[1], NULL, 1, NULL, (const int64_t[2]){1, 1}, NULL)), NULL, 0, false);
  }
  if (!strcmp(name, "max_pool2d")) {
    in[0] = EF(1, 1, 4, 4);
    return SUMALL(tg_max_pool2d(in[0], (const int64_t[2]){2, 2}, NULL, NULL, NULL));
  }
  if (!strcmp(name, "cumsum")) { in[0] = EF(3, 4); return SUMALL(tg_cumsum(in[0], 1)); }
  if (!strcmp(name, "gelu_silu")) { in[0] = EF(5); return SUMALL(tg_add(tg_gelu(in[0]), tg_silu(in[0]))); }
  return NULL;
}

/* the graph tinygrad builds for t: our CUSTOM_GRAD markers (a stride-1 conv2d's transposed-conv input gradient)
 * taken out, so the gradient follows tinygrad's rules through _pool */
static tg_tensor *tinygrad_graph(const tg_tensor *t) {
  mix_ctx_begin("tinygrad_graph");
  return tensor_ctx_end(mix_strip_custom_grad(t->uop));
}

static void check_graph_parity(void) {
  size_t n = sizeof grad_graph_cases / sizeof grad_graph_cases[0], same = 0;
  test_setenv("POOL_VIEW", "0"); /* tinygrad's _pool through repeat (movement.c pool_disjoint is ours) */
  for (size_t i = 0; i < n; i++) {
    char name[64];
    const char *slash = strchr(grad_graph_cases[i].name, '/');
    size_t len = slash ? (size_t)(slash - grad_graph_cases[i].name) : 0;
    if (!slash || len >= sizeof name) continue;
    memcpy(name, grad_graph_cases[i].name, len);
    name[len] = 0;
    int which = atoi(slash + 1), nin = 0;
    tg_scope s = tg_scope_begin();
    tg_tensor *in[4] = {NULL}, *out[4] = {NULL};
    tg_tensor *loss = graph_case(name, in, &nin);
    CHECK_MSG(loss != NULL, "%s: not built: %s", grad_graph_cases[i].name, tg_last_error());
    if (loss) loss = tinygrad_graph(loss);
    if (loss && tg_gradient(loss, (const tg_tensor *const *)in, (size_t)nin, out) == TG_OK && which < nin) {
      char *got = graph_text(out[which]->uop);
      bool eq = strcmp(got, grad_graph_cases[i].graph) == 0;
      same += eq;
      CHECK_MSG(eq, "%s: gradient graph differs from tinygrad's\n    tinygrad: %s\n    ours:     %s", grad_graph_cases[i].name,
                grad_graph_cases[i].graph, got);
      tg_free(got);
    } else {
      CHECK_MSG(false, "%s: gradient failed: %s", grad_graph_cases[i].name, tg_last_error());
    }
    tg_scope_end(s);
  }
  test_unsetenv("POOL_VIEW");
  printf("  grad: %zu of %zu gradient graphs equal tinygrad's node for node\n", same, n);
}

/* Pools whose windows do not overlap are a view (movement.c pool_disjoint, not tinygrad's): the same values and
 * gradients as tinygrad's _pool through repeat (POOL_VIEW=0), and a backward with fewer reduces (the gradient of a
 * view is a view, where repeat's is a sum over the repeats). Ragged inputs (the last window cut off), stride above
 * the kernel, non-square windows, padding; overlapping windows keep tinygrad's form. */
static int reduce_kernels(tg_tensor *t) {
  UOp *root = t->uop, *lin = sched_kernels(uop_sink(&root, 1));
  int n = 0;
  for (uint32_t i = 0; lin && i < lin->nsrc; i++) n += uop_op_in_backward_slice_with_self(lin->src[i]->src[0], TG_OP_REDUCE);
  return n;
}

static void check_pool_view(void) {
  static const struct { int64_t h, w, kh, kw, sh, sw, ph, pw; bool avg, view; } cfg[] = {
      {8, 8, 2, 2, 2, 2, 0, 0, false, true}, {7, 9, 2, 3, 2, 3, 0, 0, false, true}, {9, 7, 2, 2, 3, 3, 0, 0, false, true},
      {6, 6, 2, 2, 2, 2, 1, 1, false, true}, {8, 6, 2, 2, 2, 2, 0, 0, true, true},  {7, 7, 3, 2, 3, 2, 0, 0, true, true},
      {8, 8, 3, 3, 2, 2, 0, 0, false, false},
  };
  for (size_t i = 0; i < TG_ARRAY_LEN(cfg); i++) {
    tg_scope s = tg_scope_begin();
    tg_manual_seed(70 + (uint64_t)i);
    tg_tensor *x = tg_randn(TG_SHAPE(2, 3, cfg[i].h, cfg[i].w), TG_FLOAT32);
    const int64_t k[2] = {cfg[i].kh, cfg[i].kw}, st[2] = {cfg[i].sh, cfg[i].sw}, pd[2] = {cfg[i].ph, cfg[i].pw};
    tg_tensor *val[2][2] = {{NULL}}; /* [view, repeat][pool, gradient] */
    int nreduce[2] = {0, 0};
    tg_tensor *r = NULL; /* one output gradient for both forms */
    for (int form = 0; form < 2; form++) {
      if (form) test_setenv("POOL_VIEW", "0");
      tg_tensor *y = cfg[i].avg ? tg_avg_pool2d(x, k, st, pd, true) : tg_max_pool2d(x, k, st, pd, NULL);
      if (!r && y) r = tg_randn_like(y);
      tg_tensor *loss = y && r ? tg_sum(tg_mul(y, r), NULL, 0, false) : NULL;
      const tg_tensor *wrt[1] = {x};
      tg_tensor *g[1] = {NULL};
      CHECK_MSG(loss && tg_gradient(loss, wrt, 1, g) == TG_OK, "pool view %zu: %s", i, tg_last_error());
      test_unsetenv("POOL_VIEW");
      val[form][0] = y, val[form][1] = g[0];
      if (g[0]) nreduce[form] = reduce_kernels(g[0]);
    }
    if (!val[0][1] || !val[1][1]) { tg_scope_end(s); continue; }
    CHECK_MSG(cfg[i].view ? nreduce[0] < nreduce[1] : nreduce[0] == nreduce[1],
              "pool view %zu: %d reduce kernels in the gradient, %d through repeat", i, nreduce[0], nreduce[1]);
    for (int k2 = 0; k2 < 2; k2++) {
      size_t n = (size_t)tg_numel(val[0][k2]);
      float *a = tg_malloc(n * sizeof(float)), *b = tg_malloc(n * sizeof(float));
      bool got = tg_to_host(val[0][k2], a, n * sizeof(float)) == TG_OK && tg_to_host(val[1][k2], b, n * sizeof(float)) == TG_OK;
      CHECK_MSG(got, "pool view %zu: realize: %s", i, tg_last_error());
      double worst = 0;
      for (size_t j = 0; got && j < n; j++) worst = fmax(worst, fabs((double)a[j] - b[j]));
      CHECK_MSG(got && worst < 1e-6, "pool view %zu: the %s differs from tinygrad's form by %g", i, k2 ? "gradient" : "pool", worst);
      tg_free(a);
      tg_free(b);
    }
    tg_scope_end(s);
  }
}

/* A stride-1 conv2d's input gradient comes from the transposed-convolution rule (CUSTOM_GRAD "conv2d_input"); it must
 * equal the gradient tinygrad's rules give through _pool, on odd shapes, non-square kernels, paddings up to K-1,
 * grouped and depthwise convs, with the padded gradient masked or made contiguous first.
 * The weight gradient must be unchanged too. Strided convs keep tinygrad's path (no marker). */
static void check_conv_input_grad(void) {
  static const struct { int64_t b, cin, h, w, cout, kh, kw, py, px, stride, groups; } cfg[] = {
      {2, 3, 7, 6, 4, 3, 3, 0, 0, 1, 1}, {2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1}, {1, 2, 5, 5, 3, 5, 5, 2, 4, 1, 1},
      {2, 4, 6, 6, 2, 1, 1, 0, 0, 1, 1}, {1, 1, 9, 8, 2, 3, 5, 2, 1, 1, 1}, {2, 2, 8, 8, 3, 3, 3, 1, 1, 2, 1},
      {2, 4, 6, 7, 6, 3, 3, 1, 0, 1, 2}, {1, 6, 7, 7, 6, 3, 3, 1, 1, 1, 6}, {2, 6, 5, 6, 12, 3, 2, 2, 1, 1, 3},
      /* cin x KH x KW >= 256: the padded output gradient is made contiguous first (tensor/reduce.c) */
      {2, 32, 6, 5, 4, 3, 3, 1, 1, 1, 1}, {1, 12, 6, 6, 4, 5, 5, 2, 3, 1, 1}, {2, 64, 5, 5, 4, 3, 3, 1, 0, 1, 2},
  };
  for (size_t i = 0; i < TG_ARRAY_LEN(cfg); i++) {
    tg_scope s = tg_scope_begin();
    tg_manual_seed(40 + (uint64_t)i);
    tg_tensor *x = tg_randn(TG_SHAPE(cfg[i].b, cfg[i].cin, cfg[i].h, cfg[i].w), TG_FLOAT32);
    tg_tensor *w = tg_randn(TG_SHAPE(cfg[i].cout, cfg[i].cin / cfg[i].groups, cfg[i].kh, cfg[i].kw), TG_FLOAT32);
    const int64_t st[2] = {cfg[i].stride, cfg[i].stride}, pd[2] = {cfg[i].py, cfg[i].px};
    tg_tensor *y = tg_conv2d(x, w, NULL, (int)cfg[i].groups, st, pd, NULL);
    tg_tensor *r = y ? tg_randn_like(y) : NULL;
    tg_tensor *loss = r ? tg_sum(tg_mul(tg_relu(y), r), NULL, 0, false) : NULL;
    CHECK_MSG(loss != NULL, "conv input grad %zu: %s", i, tg_last_error());
    if (!loss) { tg_scope_end(s); continue; }
    CHECK_MSG(uop_op_in_backward_slice_with_self(loss->uop, TG_OP_CUSTOM_GRAD) == (cfg[i].stride == 1),
              "conv input grad %zu: the marker is %s", i, cfg[i].stride == 1 ? "missing" : "there on a strided conv");
    const tg_tensor *wrt[2] = {x, w};
    tg_tensor *ours[2] = {NULL}, *theirs[2] = {NULL};
    bool ok = tg_gradient(loss, wrt, 2, ours) == TG_OK && tg_gradient(tinygrad_graph(loss), wrt, 2, theirs) == TG_OK;
    CHECK_MSG(ok, "conv input grad %zu: %s", i, tg_last_error());
    for (int k = 0; ok && k < 2; k++) {
      size_t n = (size_t)tg_numel(wrt[k]);
      float *a = tg_malloc(n * sizeof(float)), *b = tg_malloc(n * sizeof(float));
      bool got = tg_to_host(ours[k], a, n * sizeof(float)) == TG_OK && tg_to_host(theirs[k], b, n * sizeof(float)) == TG_OK;
      CHECK_MSG(got, "conv input grad %zu: realize: %s", i, tg_last_error());
      double worst = 0;
      for (size_t j = 0; got && j < n; j++) worst = fmax(worst, fabs((double)a[j] - b[j]) / (1.0 + fabs((double)b[j])));
      CHECK_MSG(got && worst < 1e-5, "conv input grad %zu: %s gradient differs from tinygrad's by %g", i, k ? "weight" : "input", worst);
      tg_free(a);
      tg_free(b);
    }
    tg_scope_end(s);
  }
}

void suite_grad(void) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
  check_errors();
  check_rule_values();
  check_rules_direct();
  check_implicit_broadcast();
  check_graph_parity();
  check_pool_view();
  check_conv_input_grad();
  check_backward();
  check_steady_loop();
  check_kernel_counts();
}
