/* losses.c — tinygrad's functional nn (the Tensor methods of mixin/op.py and mixin/rand.py): linear, layernorm,
 * batchnorm, rms norm, dropout, conv_transpose2d, scaled_dot_product_attention, and the losses cross_entropy,
 * sparse_categorical_crossentropy, binary_crossentropy(_logits), nll_loss. Each builds the same graph as tinygrad's
 * Python from the public tensor calls, inside a scope that frees the intermediates. */
#include "nn/nn.h"

#include <math.h>

/* Python literals in the formulas: weak scalars, so a half-precision input stays half (tinygrad's `x + 1e-5`).
 * Their handles belong to the caller's scope, which every function here opens and closes (nn_finish). */
static tg_tensor *cf(double v) { return tg_const_float(v); }
static tg_tensor *ci(int64_t v) { return tg_const_int(v); }

/* tinygrad's _do_reduction */
static tg_tensor *do_reduction(tg_tensor *t, tg_reduction r) {
  switch (r) {
    case TG_REDUCTION_NONE: return t;
    case TG_REDUCTION_SUM: return tg_sum(t, NULL, 0, false);
    case TG_REDUCTION_MEAN: return tg_mean(t, NULL, 0, false);
  }
  tg_set_error(TG_ERR_INVALID_ARGUMENT, "reduction %d must be mean, sum or none", (int)r);
  return NULL;
}

/* Checked before any graph is built, so a bad enum never leaves half a graph in the scope. */
static bool bad_reduction(tg_reduction r, const char *op) {
  if (r == TG_REDUCTION_MEAN || r == TG_REDUCTION_SUM || r == TG_REDUCTION_NONE) return false;
  tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: reduction %d must be mean, sum or none", op, (int)r);
  return true;
}

/* Class indices may be any int dtype (the id range of tg_dtype lists the ints contiguously), but not bool. */
static bool is_int_dtype(tg_dtype d) { return d >= TG_WEAKINT && d <= TG_UINT64 && d != TG_BOOL; }

/* tinygrad's _one_hot_along_dim: x == arange(num_classes) laid along dim of x (x already has a size-1 axis there) */
static tg_tensor *one_hot_along_dim(const tg_tensor *x, int64_t num_classes, int dim) {
  int nd = tg_ndim(x);
  if (nd < 0) return NULL;
  int d = dim < 0 ? dim + nd : dim;
  int64_t rs[TG_MAX_DIMS];
  size_t k = 0;
  rs[k++] = num_classes;
  for (int i = 0; i < nd - d - 1; i++) rs[k++] = 1;
  return tg_eq(x, tg_reshape(tg_arange(0, (double)num_classes, 1, TG_VOID), rs, k));
}

/* tinygrad Tensor.linear: x @ weight (+ bias); a 1-d weight scales elementwise instead. Note the weight layout is
 * (in, out) here, as tinygrad's functional linear; nn.Linear stores (out, in) and transposes (layers.c). */
tg_tensor *tg_linear(const tg_tensor *x, const tg_tensor *weight, const tg_tensor *bias) {
  tg_scope s = tg_scope_begin();
  tg_tensor *r = tg_ndim(weight) == 1 ? tg_mul(x, weight) : tg_dot(x, weight);
  if (bias) r = tg_add(r, bias);
  return nn_finish(s, r);
}

/* tinygrad layernorm: (x - mean) * rsqrt(mean((x - mean)^2) + eps) over axes (default the last); the affine part is
 * nn.LayerNorm's (layers.c). */
tg_tensor *tg_layernorm(const tg_tensor *x, const int *axes, size_t naxes, double eps) {
  static const int last[1] = {-1};
  if (!axes) { axes = last; naxes = 1; }
  tg_scope s = tg_scope_begin();
  tg_tensor *y = tg_sub(x, tg_mean(x, axes, naxes, true));
  tg_tensor *r = tg_mul(y, tg_rsqrt(tg_add(tg_mean(tg_mul(y, y), axes, naxes, true), cf(eps))));
  return nn_finish(s, r);
}

/* tinygrad batchnorm: the statistics are given (batch statistics or running ones: nn.BatchNorm picks, layers.c) and
 * reshaped to broadcast over every axis not in `axes` (default: the channel axis 1). invstd may already be
 * broadcastable (a full-rank tensor), then it is used as is. */
tg_tensor *tg_batchnorm(const tg_tensor *x, const tg_tensor *weight, const tg_tensor *bias, const tg_tensor *mean,
                        const tg_tensor *invstd, const int *axes, size_t naxes) {
  static const int channel[1] = {1};
  if (!axes) { axes = channel; naxes = 1; }
  int nd = tg_ndim(x);
  if (nd < 0 || !mean || !invstd) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_batchnorm: NULL tensor");
    return NULL;
  }
  int64_t shape[TG_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    bool kept = false;
    for (size_t j = 0; j < naxes; j++) {
      int a = axes[j] < 0 ? axes[j] + nd : axes[j];
      if (a < 0 || a >= nd) {
        tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_batchnorm: axis %d out of range for %d dims", axes[j], nd);
        return NULL;
      }
      kept = kept || a == i;
    }
    shape[i] = kept ? tg_shape(x)[i] : 1;
  }
  tg_scope s = tg_scope_begin();
  tg_tensor *r = tg_sub(x, tg_reshape(mean, shape, (size_t)nd));
  if (weight) r = tg_mul(r, tg_reshape(weight, shape, (size_t)nd));
  r = tg_mul(r, tg_ndim(invstd) == (int)naxes ? tg_reshape(invstd, shape, (size_t)nd) : nn_same(invstd));
  if (bias) r = tg_add(r, tg_reshape(bias, shape, (size_t)nd));
  return nn_finish(s, r);
}

/* RMSNorm over the last axis, computed in float32 and cast back, as llama's RMSNorm (x.float() ... .type_as(x)). */
tg_tensor *tg_rms_norm(const tg_tensor *x, double eps) {
  tg_scope s = tg_scope_begin();
  tg_tensor *xf = tg_cast(x, TG_FLOAT32);
  tg_tensor *r = tg_mul(xf, tg_rsqrt(tg_add(tg_mean(tg_square(xf), TG_AXES(-1), true), cf(eps))));
  return nn_finish(s, tg_cast(r, tg_get_dtype(x)));
}

/* tinygrad dropout: identity outside training; else keep where rand >= p, scaled by 1/(1-p). The mask is made
 * contiguous (as tinygrad's) so it is computed once and the backward pass reads the stored mask. */
tg_tensor *tg_dropout(const tg_tensor *x, double p) {
  if (!(p >= 0 && p <= 1)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_dropout: p=%g is out of range [0, 1]", p);
    return NULL;
  }
  if (!tg_is_training() || p == 0) return nn_same(x);
  tg_scope s = tg_scope_begin();
  if (p == 1) return nn_finish(s, tg_zeros_like(x, TG_VOID));
  tg_tensor *keep = tg_contiguous(tg_ge(tg_rand(tg_shape(x), (size_t)TG_MAX(tg_ndim(x), 0), TG_FLOAT32), cf(p)));
  tg_tensor *r = tg_div(tg_where(keep, x, ci(0)), cf(1.0 - p));
  return nn_finish(s, r);
}

/* Pads (before, after) on the two spatial axes; negative amounts shrink (tinygrad's _pad_constant). Transposed
 * convolutions need this: their padding is (k-1)*d - p, negative when p exceeds the kernel's reach. */
static tg_tensor *pad_spatial(const tg_tensor *x, const int64_t before[2], const int64_t after[2]) {
  int nd = tg_ndim(x);
  if (nd != 4) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "conv: expected a 4-d (N, C, H, W) input, got %d dims", nd);
    return NULL;
  }
  int64_t pads[8] = {0}, bounds[8];
  bool shrink = false;
  for (int i = 0; i < 2; i++) {
    pads[4 + 2 * i] = TG_MAX(before[i], 0);
    pads[5 + 2 * i] = TG_MAX(after[i], 0);
    shrink = shrink || before[i] < 0 || after[i] < 0;
  }
  tg_tensor *r = tg_pad(x, pads, 4, TG_PAD_CONSTANT, 0.0);
  if (!shrink || !r) return r;
  for (int i = 0; i < 4; i++) { bounds[2 * i] = 0; bounds[2 * i + 1] = tg_shape(r)[i]; }
  for (int i = 0; i < 2; i++) {
    bounds[4 + 2 * i] = before[i] < 0 ? -before[i] : 0;
    bounds[5 + 2 * i] = tg_shape(r)[2 + i] + (after[i] < 0 ? after[i] : 0);
    if (bounds[5 + 2 * i] < bounds[4 + 2 * i]) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "conv: padding removes more than the whole input");
      return NULL;
    }
  }
  return tg_shrink(r, bounds, 4);
}

/* conv2d with asymmetric (before, after) padding: symmetric non-negative padding is tg_conv2d's own padding
 * argument, anything else is padded (or cropped) first. */
tg_tensor *nn_conv2d_padded(const tg_tensor *x, const tg_tensor *w, const tg_tensor *bias, int groups,
                            const int64_t stride[2], const int64_t dilation[2], const int64_t before[2],
                            const int64_t after[2]) {
  static const int64_t zero[2] = {0, 0};
  tg_scope s = tg_scope_begin();
  tg_tensor *r;
  if (before[0] == after[0] && before[1] == after[1] && before[0] >= 0 && before[1] >= 0)
    r = tg_conv2d(x, w, bias, groups, stride, before, dilation);
  else r = tg_conv2d(pad_spatial(x, before, after), w, bias, groups, stride, zero, dilation);
  return nn_finish(s, r);
}

/* tinygrad conv_transpose2d: a direct convolution of the input spread by the stride (zeros between pixels) with the
 * weight flipped spatially and its in/out channels swapped per group, padded by (k-1)*dilation - padding (and
 * output_padding on the far side). */
tg_tensor *tg_conv_transpose2d(const tg_tensor *x, const tg_tensor *weight, const tg_tensor *bias, int groups,
                               const int64_t stride_[2], const int64_t padding_[2], const int64_t dilation_[2],
                               const int64_t output_padding_[2]) {
  static const int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  const int64_t *stride = stride_ ? stride_ : one, *dilation = dilation_ ? dilation_ : one;
  const int64_t *padding = padding_ ? padding_ : zero, *output_padding = output_padding_ ? output_padding_ : zero;
  if (!x || !weight) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_conv_transpose2d: NULL tensor");
    return NULL;
  }
  if (tg_ndim(x) != 4 || tg_ndim(weight) != 4) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_conv_transpose2d: x and weight must be 4-d, got %d and %d dims",
                 tg_ndim(x), tg_ndim(weight));
    return NULL;
  }
  const int64_t *ws = tg_shape(weight);
  if (groups < 1 || ws[0] % groups != 0 || tg_shape(x)[1] != ws[0]) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT,
                 "tg_conv_transpose2d: input channels %lld must equal weight's first dim %lld, divisible by groups %d",
                 (long long)tg_shape(x)[1], (long long)ws[0], groups);
    return NULL;
  }
  for (int i = 0; i < 2; i++) {
    if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0 || output_padding[i] < 0 ||
        output_padding[i] >= TG_MAX(stride[i], dilation[i])) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_conv_transpose2d: bad stride %lld, dilation %lld, padding %lld or "
                   "output_padding %lld (must be smaller than stride or dilation)", (long long)stride[i],
                   (long long)dilation[i], (long long)padding[i], (long long)output_padding[i]);
      return NULL;
    }
  }
  tg_scope s = tg_scope_begin();
  /* weight (Cin, Cout/g, kh, kw) -> (g, Cout/g, Cin/g, kh, kw) flipped spatially -> (Cout, Cin/g, kh, kw) */
  tg_tensor *w = tg_reshape(weight, TG_SHAPE(groups, ws[0] / groups, ws[1], ws[2], ws[3]));
  w = tg_flip(tg_transpose(w, 1, 2), TG_AXES(3, 4));
  w = tg_reshape(w, TG_SHAPE(groups * ws[1], ws[0] / groups, ws[2], ws[3]));
  tg_tensor *xx = nn_same(x);
  if (stride[0] > 1 || stride[1] > 1) {
    /* spread the input: each pixel followed by stride-1 zeros, the trailing zeros cut */
    const int64_t *xs = tg_shape(x);
    xx = tg_reshape(xx, TG_SHAPE(xs[0], xs[1], xs[2], 1, xs[3], 1));
    const int64_t pads[12] = {0, 0, 0, 0, 0, 0, 0, stride[0] - 1, 0, 0, 0, stride[1] - 1};
    xx = tg_pad(xx, pads, 6, TG_PAD_CONSTANT, 0.0);
    xx = tg_reshape(xx, TG_SHAPE(xs[0], xs[1], xs[2] * stride[0], xs[3] * stride[1]));
    const int64_t bounds[8] = {0, xs[0], 0, xs[1], 0, xs[2] * stride[0] - (stride[0] - 1), 0,
                               xs[3] * stride[1] - (stride[1] - 1)};
    xx = tg_shrink(xx, bounds, 4);
  }
  int64_t before[2], after[2];
  for (int i = 0; i < 2; i++) {
    before[i] = (ws[2 + i] - 1) * dilation[i] - padding[i];
    after[i] = (ws[2 + i] - 1) * dilation[i] - padding[i] + output_padding[i];
  }
  return nn_finish(s, nn_conv2d_padded(xx, w, bias, groups, one, dilation, before, after));
}

/* tinygrad scaled_dot_product_attention: softmax(q k^T / sqrt(d) + mask) v; a bool mask allows where true (0 or
 * -inf added), is_causal builds the lower-triangular one. Scores in float32 (or float64) and the softmax in q's
 * dtype, as tinygrad's. The flash and windowed variants are in attention.c. */
tg_tensor *tg_scaled_dot_product_attention(const tg_tensor *q, const tg_tensor *k, const tg_tensor *v,
                                           const tg_tensor *mask, double dropout_p, bool is_causal) {
  if (!q || !k || !v) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_scaled_dot_product_attention: NULL tensor");
    return NULL;
  }
  if (is_causal && mask) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_scaled_dot_product_attention: cannot set a mask when is_causal");
    return NULL;
  }
  if (tg_ndim(q) < 2 || tg_ndim(k) < 2) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_scaled_dot_product_attention: q and k need at least 2 dims");
    return NULL;
  }
  tg_scope s = tg_scope_begin();
  /* the scores are computed in at least float32 (tinygrad's matmul dtype=least_upper_dtype(q, k, float32)) */
  tg_dtype qd = tg_get_dtype(q), kd = tg_get_dtype(k);
  tg_dtype acc = (qd == TG_FLOAT64 || kd == TG_FLOAT64) ? TG_FLOAT64 : TG_FLOAT32;
  tg_tensor *qk = tg_matmul(tg_cast(q, acc), tg_transpose(tg_cast(k, acc), -2, -1));
  qk = tg_div(qk, cf(sqrt((double)tg_shape(q)[tg_ndim(q) - 1])));
  tg_tensor *m = mask ? nn_same(mask) : NULL;
  if (is_causal && qk) {
    int64_t L = tg_shape(qk)[tg_ndim(qk) - 2], S = tg_shape(qk)[tg_ndim(qk) - 1];
    m = tg_ge(tg_reshape(tg_arange(0, (double)L, 1, TG_VOID), TG_SHAPE(L, 1)),
              tg_reshape(tg_arange(0, (double)S, 1, TG_VOID), TG_SHAPE(1, S)));
  }
  if (m) {
    if (tg_get_dtype(m) == TG_BOOL) m = tg_where(m, cf(0.0), cf(-INFINITY));
    qk = tg_add(qk, m);
  }
  tg_tensor *attn = tg_dropout(tg_softmax(tg_cast(qk, qd), -1), dropout_p);
  return nn_finish(s, tg_matmul(attn, v));
}

/* ---------------------------------------------------------------------------------------------------- losses */

/* x are probabilities: -(y log x + (1-y) log(1-x)). From logits, tg_binary_crossentropy_logits is the stable form. */
tg_tensor *tg_binary_crossentropy(const tg_tensor *x, const tg_tensor *y, tg_reduction reduction) {
  if (bad_reduction(reduction, "tg_binary_crossentropy")) return NULL;
  tg_scope s = tg_scope_begin();
  tg_tensor *a = tg_mul(tg_neg(y), tg_log(x));
  tg_tensor *b = tg_mul(tg_sub(ci(1), y), tg_log(tg_sub(ci(1), x)));
  return nn_finish(s, do_reduction(tg_sub(a, b), reduction));
}

/* -(pos_weight * y * logsigmoid(x) + (1-y) * logsigmoid(-x)): logsigmoid never takes the log of a rounded 0. */
tg_tensor *tg_binary_crossentropy_logits(const tg_tensor *x, const tg_tensor *y, tg_reduction reduction,
                                         const tg_tensor *pos_weight) {
  if (bad_reduction(reduction, "tg_binary_crossentropy_logits")) return NULL;
  tg_scope s = tg_scope_begin();
  tg_tensor *log_p = tg_logsigmoid(x), *log_1mp = tg_logsigmoid(tg_neg(x));
  tg_tensor *pos = tg_mul(tg_mul(pos_weight ? nn_same(pos_weight) : ci(1), y), log_p);
  tg_tensor *r = tg_neg(tg_add(pos, tg_mul(tg_sub(ci(1), y), log_1mp)));
  return nn_finish(s, do_reduction(r, reduction));
}

/* tinygrad sparse_categorical_crossentropy: x (..., classes) logits, y integer classes. Ignored targets are masked
 * out of both terms, and the mean divides by the number of targets kept, not by the element count (as tinygrad).
 * Label smoothing mixes in the mean log-probability over classes. */
tg_tensor *tg_sparse_categorical_crossentropy(const tg_tensor *x, const tg_tensor *y, int64_t ignore_index,
                                              double label_smoothing, tg_reduction reduction) {
  if (bad_reduction(reduction, "tg_sparse_categorical_crossentropy")) return NULL;
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_sparse_categorical_crossentropy: label_smoothing %g not in [0, 1]",
                 label_smoothing);
    return NULL;
  }
  if (!x || !y) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_sparse_categorical_crossentropy: NULL");
    return NULL;
  }
  if (!is_int_dtype(tg_get_dtype(y)) || tg_ndim(x) < 1) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_sparse_categorical_crossentropy: targets must be integer class indices "
                 "(got %s) and x at least 1-d", tg_dtype_name(tg_get_dtype(y)));
    return NULL;
  }
  tg_scope s = tg_scope_begin();
  int64_t classes = tg_shape(x)[tg_ndim(x) - 1];
  tg_tensor *log_probs = tg_log_softmax(x, -1);
  tg_tensor *loss_mask = ignore_index != -1 ? tg_ne(y, tg_const_int(ignore_index)) : tg_full_like(y, 1, TG_BOOL);
  tg_tensor *yh = tg_mul(one_hot_along_dim(tg_unsqueeze(y, -1), classes, -1), tg_unsqueeze(loss_mask, -1));
  tg_tensor *smoothing = tg_mul(cf(label_smoothing), tg_mul(tg_mean(log_probs, TG_AXES(-1), false), loss_mask));
  tg_tensor *unreduced = tg_add(tg_mul(cf(1 - label_smoothing), tg_sum(tg_mul(log_probs, yh), TG_AXES(-1), false)),
                                smoothing);
  tg_tensor *r = reduction == TG_REDUCTION_MEAN
                     ? tg_div(tg_neg(tg_sum(unreduced, NULL, 0, false)), tg_sum(loss_mask, NULL, 0, false))
                     : tg_neg(do_reduction(unreduced, reduction));
  return nn_finish(s, r);
}

/* tinygrad cross_entropy (torch's layout): classes on axis 1 (axis 0 for a 1-d x); y either probabilities of x's
 * shape or class indices of x's shape without the class axis (then one-hot). Smoothing spreads label_smoothing
 * evenly over the classes. */
tg_tensor *tg_cross_entropy(const tg_tensor *x, const tg_tensor *y, tg_reduction reduction, double label_smoothing) {
  if (bad_reduction(reduction, "tg_cross_entropy")) return NULL;
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_cross_entropy: label_smoothing %g not in [0, 1]", label_smoothing);
    return NULL;
  }
  if (!x || !y) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_cross_entropy: NULL tensor");
    return NULL;
  }
  int nd = tg_ndim(x);
  if (nd < 1) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_cross_entropy: x must have a class axis");
    return NULL;
  }
  int cdim = nd == 1 ? 0 : 1;
  int64_t classes = tg_shape(x)[cdim];
  bool same = tg_ndim(y) == nd;
  for (int i = 0; same && i < nd; i++) same = tg_shape(y)[i] == tg_shape(x)[i];
  tg_scope s = tg_scope_begin();
  tg_tensor *yy = nn_same(y);
  if (!same) {
    /* class indices: y must be x's shape without the class axis */
    bool ok = tg_ndim(y) == nd - 1;
    for (int i = 0, j = 0; ok && i < nd; i++) {
      if (i == cdim) continue;
      ok = tg_shape(y)[j++] == tg_shape(x)[i];
    }
    if (!ok) {
      tg_scope_end(s);
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_cross_entropy: shape mismatch between x (%d dims) and y (%d dims)", nd,
                   tg_ndim(y));
      return NULL;
    }
    yy = one_hot_along_dim(tg_unsqueeze(y, cdim), classes, cdim);
  }
  yy = tg_add(tg_mul(cf(1 - label_smoothing), yy), cf(label_smoothing / (double)classes));
  tg_tensor *r = tg_neg(tg_sum(tg_mul(tg_log_softmax(x, cdim), yy), &cdim, 1, false));
  return nn_finish(s, do_reduction(r, reduction));
}

/* tinygrad nll_loss: x (N, C, ...) log-probabilities, the loss -x[n, y[n]] times the class weight; with a mean
 * reduction the weights (of the targets not ignored) are the divisor, as torch's weighted mean. */
tg_tensor *tg_nll_loss(const tg_tensor *x, const tg_tensor *y, const tg_tensor *weight, bool has_ignore_index,
                       int64_t ignore_index, tg_reduction reduction) {
  if (bad_reduction(reduction, "tg_nll_loss")) return NULL;
  if (!x || !y) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_nll_loss: NULL tensor");
    return NULL;
  }
  if (tg_ndim(x) < 2 || tg_ndim(y) != tg_ndim(x) - 1 || !is_int_dtype(tg_get_dtype(y))) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_nll_loss: x (N, C, ...) and integer y (N, ...) expected, got %d and %d "
                 "dims, y %s", tg_ndim(x), tg_ndim(y), tg_dtype_name(tg_get_dtype(y)));
    return NULL;
  }
  tg_scope s = tg_scope_begin();
  tg_tensor *w = weight ? tg_reshape(tg_gather(weight, 0, tg_flatten(y, 0, -1)), tg_shape(y), (size_t)tg_ndim(y))
                        : tg_full_like(y, 1, TG_VOID);
  tg_tensor *mw = has_ignore_index ? tg_mul(w, tg_ne(y, tg_const_int(ignore_index))) : w;
  tg_tensor *nll = tg_mul(tg_neg(tg_squeeze(tg_gather(x, 1, tg_unsqueeze(y, 1)), 1)), mw);
  tg_tensor *r = reduction == TG_REDUCTION_MEAN ? tg_div(tg_sum(nll, NULL, 0, false), tg_sum(mw, NULL, 0, false))
                                                : do_reduction(nll, reduction);
  return nn_finish(s, r);
}
