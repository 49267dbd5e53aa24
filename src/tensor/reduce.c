/* reduce.c — the reduction part of the Tensor API (sum/max/mean/var/std, softmax, argmax, cumulative ops, matmul,
 * gather, one_hot, conv2d and pooling): argument checks and the build context around the builders of
 * uop/mixin_reduce.c. tg_conv2d also marks its input gradient for the transposed-convolution rule (see below). */
#include "tensor/tensor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------ public API */

static const int *axes_or_null(const int *axes) { return axes; }

#define REDUCE_API(name, expr)                                                             \
  tg_tensor *name(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim) {       \
    mix_ctx_begin(#name);                                                                     \
    UOp *x = tensor_in(t, 1);                                                                    \
    const int *ax = axes_or_null(axes);                                                    \
    int nax = (int)naxes;                                                                  \
    if (x && naxes > TG_MAX_DIMS * 4) return tensor_ctx_end(mix_err("too many axes (%zu)", naxes)); \
    return tensor_ctx_end(x ? (expr) : NULL);                                                    \
  }

REDUCE_API(tg_sum, mix_sum(x, ax, nax, keepdim, NULL))
REDUCE_API(tg_prod, mix_prod(x, ax, nax, keepdim))
REDUCE_API(tg_max, mix_max(x, ax, nax, keepdim))
REDUCE_API(tg_min, mix_min(x, ax, nax, keepdim))
REDUCE_API(tg_mean, mix_mean(x, ax, nax, keepdim))
REDUCE_API(tg_any, mix_max(mix_cast(x, DT_BOOL), ax, nax, keepdim))
REDUCE_API(tg_all, mix_prod(mix_cast(x, DT_BOOL), ax, nax, keepdim))

tg_tensor *tg_var(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim, double correction) {
  mix_ctx_begin("tg_var");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? mix_var(x, axes, (int)naxes, keepdim, correction) : NULL);
}

tg_tensor *tg_std(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim, double correction) {
  mix_ctx_begin("tg_std");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? mix_sqrt(mix_var(x, axes, (int)naxes, keepdim, correction)) : NULL);
}

static tg_tensor *axis_api(const char *op, const tg_tensor *t, int axis, bool keepdim, int kind) {
  mix_ctx_begin(op);
  UOp *x = tensor_in(t, 1), *r = NULL;
  int d;
  if (x && mix_resolve_dim(x, axis, false, &d)) {
    switch (kind) {
    case 0: r = mix_logsumexp(x, d, keepdim); break;
    case 1: r = mix_argmax(x, d, keepdim); break;
    case 2: r = mix_argmax(mix_inverse(x), d, keepdim); break;
    case 3: r = mix_cumsum(x, d); break;
    case 4: r = mix_softmax(x, d, false); break;
    default: r = mix_softmax(x, d, true); break;
    }
  }
  return tensor_ctx_end(r);
}

tg_tensor *tg_logsumexp(const tg_tensor *t, int axis, bool keepdim) { return axis_api("tg_logsumexp", t, axis, keepdim, 0); }
tg_tensor *tg_argmax(const tg_tensor *t, int axis, bool keepdim) { return axis_api("tg_argmax", t, axis, keepdim, 1); }
tg_tensor *tg_argmin(const tg_tensor *t, int axis, bool keepdim) { return axis_api("tg_argmin", t, axis, keepdim, 2); }
tg_tensor *tg_cumsum(const tg_tensor *t, int axis) { return axis_api("tg_cumsum", t, axis, false, 3); }
tg_tensor *tg_softmax(const tg_tensor *t, int axis) { return axis_api("tg_softmax", t, axis, false, 4); }
tg_tensor *tg_log_softmax(const tg_tensor *t, int axis) { return axis_api("tg_log_softmax", t, axis, false, 5); }

tg_tensor *tg_cumprod(const tg_tensor *t, int axis) {
  mix_ctx_begin("tg_cumprod");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? mix_split_cumalu(x, axis, TG_OP_MUL) : NULL);
}

/* cummax/cummin: the values as the result, the indices (when asked for) as a second new handle */
static tg_tensor *cum_extreme(const char *op, const tg_tensor *t, int axis, tg_tensor **indices, bool min) {
  if (indices) *indices = NULL;
  mix_ctx_begin(op);
  UOp *x = tensor_in(t, 1), *idx = NULL;
  UOp *v = x ? mix_cummax(min ? mix_inverse(x) : x, axis, indices ? &idx : NULL) : NULL;
  if (v && min) v = mix_inverse(v);
  mix_ctx_begin(op); /* nested: the values' handle is made while the context (and idx's nodes) stay open */
  tg_tensor *values = tensor_ctx_end(v);
  if (indices && values) *indices = tensor_ctx_end(idx);
  else mix_ctx_end();
  return values;
}
tg_tensor *tg_cummax(const tg_tensor *t, int axis, tg_tensor **indices) { return cum_extreme("tg_cummax", t, axis, indices, false); }
tg_tensor *tg_cummin(const tg_tensor *t, int axis, tg_tensor **indices) { return cum_extreme("tg_cummin", t, axis, indices, true); }

tg_tensor *tg_logcumsumexp(const tg_tensor *t, int axis) {
  mix_ctx_begin("tg_logcumsumexp");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? mix_logcumsumexp(x, axis) : NULL);
}

tg_tensor *tg_argmax_all(const tg_tensor *t) {
  mix_ctx_begin("tg_argmax_all");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? mix_argmax(mix_flatten(x, 0, -1), 0, false) : NULL);
}

tg_tensor *tg_matmul(const tg_tensor *a, const tg_tensor *b) {
  mix_ctx_begin("tg_matmul");
  UOp *x = tensor_in(a, 1), *w = x ? tensor_in(b, 2) : NULL;
  return tensor_ctx_end(w ? mix_dot(x, w) : NULL);
}

tg_tensor *tg_dot(const tg_tensor *a, const tg_tensor *b) {
  mix_ctx_begin("tg_dot");
  UOp *x = tensor_in(a, 1), *w = x ? tensor_in(b, 2) : NULL;
  return tensor_ctx_end(w ? mix_dot(x, w) : NULL);
}

tg_tensor *tg_gather(const tg_tensor *t, int axis, const tg_tensor *index) {
  mix_ctx_begin("tg_gather");
  UOp *x = tensor_in(t, 1), *i = x ? tensor_in(index, 2) : NULL;
  return tensor_ctx_end(i ? mix_gather(x, axis, i) : NULL);
}

tg_tensor *tg_one_hot(const tg_tensor *t, int64_t num_classes) {
  mix_ctx_begin("tg_one_hot");
  UOp *x = tensor_in(t, 1), *r = NULL;
  if (x && !dt_is_int(x->dtype)) r = mix_err("expect integer dtype, getting %s", x->dtype->name);
  else if (x && num_classes < 0) r = mix_err("num_classes must be non-negative, got %lld", (long long)num_classes);
  else if (x) {
    tg_index idx[2] = {{TG_IDX_ELLIPSIS, 0, 0, 1, false, false, NULL}, {TG_IDX_NEWAXIS, 0, 0, 1, false, false, NULL}};
    r = mix_where(mix_one_hot_along_dim(mix_getitem(x, idx, NULL, 2), num_classes, -1), mix_weak_int(1), mix_weak_int(0));
  }
  return tensor_ctx_end(r);
}

/* ---- conv and pooling ---- */

/* (pad_y, pad_x) per spatial axis -> grouped (before, after) pairs over all axes, leading axes unpadded */
static void spatial_pads(int ndim, const int64_t *padding, int64_t *pads) {
  memset(pads, 0, sizeof(int64_t) * 2 * (size_t)ndim);
  for (int j = 0; j < 2; j++) pads[2 * (ndim - 2 + j)] = pads[2 * (ndim - 2 + j) + 1] = padding ? padding[j] : 0;
}

/* The input gradient of a stride-1, undilated conv2d is itself a convolution: the output gradient padded by K-1-p,
 * against the weight flipped in both spatial axes with its channel axes swapped within each group (a transposed
 * convolution, grouped like the forward one). tinygrad differentiates through _pool's repeat/shrink/reshape chain instead, which gives the input
 * gradient as one kernel over a (K+1)x(K+1) window with modulo index math and masks the C compiler cannot vectorize.
 * Measured (2 cores, AVX-512): beautiful_mnist's conv2 input gradient at batch 512 (32->32 channels, 5x5, 24x24)
 * 690 ms through _pool, 200 ms as a convolution (its padding masks cost: the same conv unpadded takes 77 ms); the
 * training step (bench_train) 0.71 -> 1.18 steps/s. So tg_conv2d computes its value from DETACH(x) and marks it
 * CUSTOM_GRAD(value, x, w) "conv2d_input:groups:py:px": the weight gradient still comes from the value's graph, the input's
 * from this rule (grad/rules.c). Same kernel count: one kernel for the input gradient either way. */
static UOp *conv2d_input_grad_mark(UOp *value, UOp *x, UOp *w, int groups, const int64_t padding[2]) {
  char arg[80];
  snprintf(arg, sizeof arg, "conv2d_input:%d:%lld:%lld", groups, (long long)padding[0], (long long)padding[1]);
  UOp *src[3] = {value, x, w};
  return uop_new(TG_OP_CUSTOM_GRAD, value->dtype, src, 3, arg_str(arg));
}

tg_tensor *tg_conv2d(const tg_tensor *xt, const tg_tensor *wt, const tg_tensor *bt, int groups, const int64_t stride[2],
                     const int64_t padding[2], const int64_t dilation[2]) {
  mix_ctx_begin("tg_conv2d");
  UOp *x = tensor_in(xt, 1), *w = x ? tensor_in(wt, 2) : NULL, *b = NULL;
  if (w && bt) b = tensor_in(bt, 3);
  if (!w || (bt && !b)) return tensor_ctx_end(NULL);
  Shape xs = xt->shape, ws = wt->shape;
  static const int64_t ones[2] = {1, 1}, zeros[2] = {0, 0};
  const int64_t *st = stride ? stride : ones, *dl = dilation ? dilation : ones, *pd = padding ? padding : zeros;
  if (xs.ndim != 4 || ws.ndim != 4) return tensor_ctx_end(mix_err("conv2d needs 4-d input and weight, got %s and %s", mix_fmt_shape(&xs), mix_fmt_shape(&ws)));
  if (groups < 1) return tensor_ctx_end(mix_err("groups must be positive, got %d", groups));
  int64_t cin_ = xs.d[1], cout = ws.d[0], cin = ws.d[1];
  if (groups * cin != cin_ || cout % groups)
    return tensor_ctx_end(mix_err("Input Tensor shape %s does not match the shape of the weights %s. (%lld vs. %lld)", mix_fmt_shape(&xs),
                         mix_fmt_shape(&ws), (long long)(groups * cin), (long long)cin_));
  if (pd[0] < 0 || pd[1] < 0) return tensor_ctx_end(mix_err("negative padding"));
  int64_t pad4[4] = {pd[0], pd[0], pd[1], pd[1]};
  bool unit = st[0] == 1 && st[1] == 1 && dl[0] == 1 && dl[1] == 1;
  /* tinygrad WINO=1: a float 3x3 conv of stride and dilation 1 as Winograd F(4x4, 3x3) (4 kernels, ~1/4 of the
   * multiplies); its gradient comes through the transforms (tinygrad's graph), its output is realized. Integer convs
   * keep the direct form (the transforms' fractions have no integer meaning). */
  bool wino = tg_getenv_int("WINO", 0) && ws.d[2] == 3 && ws.d[3] == 3 && unit && dt_is_float(x->dtype);
  bool transposed_grad = !wino && unit && pd[0] < ws.d[2] && pd[1] < ws.d[3] && dt_is_float(x->dtype);
  UOp *ret = wino ? mix_conv2d_winograd(x, w, groups, pad4)
                  : mix_conv2d(transposed_grad ? mix_detach(x) : x, w, groups, st, dl, pad4);
  if (ret && transposed_grad) ret = conv2d_input_grad_mark(ret, x, w, groups, pd);
  if (ret && b) {
    int64_t br[4] = {1, -1, 1, 1};
    ret = mix_add(ret, mix_reshape(b, br, 4));
  }
  if (wino) ret = mix_contiguous_backward(mix_contiguous(ret));
  return tensor_ctx_end(ret);
}

static bool pool_args(const tg_tensor *xt, const int64_t *kernel, const int64_t *stride, const int64_t *padding) {
  if (!kernel) return mix_err("kernel size is NULL"), false;
  if (xt->shape.ndim < 2) return mix_err("pooling needs at least 2 dims, got %s", mix_fmt_shape(&xt->shape)), false;
  for (int j = 0; j < 2; j++) {
    if (kernel[j] < 1 || (stride && stride[j] < 1)) return mix_err("kernel and stride must be positive"), false;
    if (padding && padding[j] < 0) return mix_err("negative padding"), false;
  }
  return true;
}

tg_tensor *tg_max_pool2d(const tg_tensor *xt, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                         const int64_t dilation[2]) {
  mix_ctx_begin("tg_max_pool2d");
  UOp *x = tensor_in(xt, 1);
  if (!x || !pool_args(xt, kernel, stride, padding)) return tensor_ctx_end(NULL);
  static const int64_t ones[2] = {1, 1};
  int nd = xt->shape.ndim;
  int64_t pads[2 * TG_MAX_DIMS];
  spatial_pads(nd, padding, pads);
  const DType *dt = dt_strong(x->dtype);
  Const lo = uop_identity_element(TG_OP_MAX, dt); /* padding never wins the max */
  UOp *p = mix_pool(mix_pad_constant(x, pads, nd, lo), kernel, 2, stride ? stride : kernel, dilation ? dilation : ones);
  int axes[2] = {-2, -1};
  return tensor_ctx_end(mix_max(p, axes, 2, false));
}

tg_tensor *tg_avg_pool2d(const tg_tensor *xt, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                         bool count_include_pad) {
  mix_ctx_begin("tg_avg_pool2d");
  UOp *x = tensor_in(xt, 1);
  if (!x || !pool_args(xt, kernel, stride, padding)) return tensor_ctx_end(NULL);
  static const int64_t ones[2] = {1, 1};
  int nd = xt->shape.ndim;
  int64_t pads[2 * TG_MAX_DIMS];
  spatial_pads(nd, padding, pads);
  const int64_t *st = stride ? stride : kernel;
  int axes[2] = {-2, -1};
  UOp *p = mix_pool(mix_pad_constant(x, pads, nd, const_float(0.0)), kernel, 2, st, ones);
  if (count_include_pad) return tensor_ctx_end(mix_mean(p, axes, 2, false));
  UOp *cnt = mix_pool(mix_pad_constant(mix_const_like(x, const_int(1), NULL), pads, nd, const_float(0.0)), kernel, 2, st, ones);
  return tensor_ctx_end(mix_div(mix_sum(p, axes, 2, false, NULL), mix_sum(cnt, axes, 2, false, NULL), TG_ROUND_NONE));
}
