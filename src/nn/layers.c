/* layers.c — tinygrad's nn layers (nn/__init__.py) as C structs holding their parameter tensors, and the
 * initializers of mixin/rand.py. Default initializations draw from tg_rand in tinygrad's order, so a seeded model
 * gets tinygrad's numbers. Parameters are realized at creation and marked tg_requires_grad; BatchNorm's running
 * statistics are buffers (not parameters), updated by assign in training mode. */
#include "nn/nn.h"

#include <math.h>
#include <stdio.h>

/* ---------------------------------------------------------------------------------------------- initializers */

/* The fan computations of tinygrad's initializers: shape[0] is fan_out, the product of the rest fan_in (the
 * receptive field times the input channels for a conv weight). */
static bool check_init_shape(const char *op, const int64_t *shape, size_t ndim, double *rest) {
  if (ndim < 1 || !shape) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: needs at least one dimension", op);
    return false;
  }
  double p = 1;
  for (size_t i = 1; i < ndim; i++) p *= (double)shape[i];
  *rest = p;
  return true;
}

/* tinygrad scaled_uniform: uniform(-1, 1) * numel^-0.5. */
tg_tensor *tg_scaled_uniform(const int64_t *shape, size_t ndim, tg_dtype dtype) {
  double numel = 1;
  for (size_t i = 0; shape && i < ndim; i++) numel *= (double)shape[i];
  tg_scope s = tg_scope_begin();
  tg_tensor *r = tg_mul(tg_uniform(shape, ndim, -1.0, 1.0, dtype), tg_const_float(pow(numel, -0.5)));
  return nn_finish(s, r);
}

/* Glorot/Xavier: bound sqrt(6 / (fan_out + fan_in)). Kaiming: gain sqrt(2 / (1 + a^2)) over fan_in, as a uniform
 * bound (times sqrt 3) or a normal's standard deviation. */
tg_tensor *tg_glorot_uniform(const int64_t *shape, size_t ndim, tg_dtype dtype) {
  double rest;
  if (!check_init_shape("tg_glorot_uniform", shape, ndim, &rest)) return NULL;
  double bound = sqrt(6.0 / ((double)shape[0] + rest));
  return tg_uniform(shape, ndim, -bound, bound, dtype);
}

tg_tensor *tg_kaiming_uniform(const int64_t *shape, size_t ndim, double a, tg_dtype dtype) {
  double rest;
  if (!check_init_shape("tg_kaiming_uniform", shape, ndim, &rest)) return NULL;
  double bound = sqrt(6.0 / (1 + a * a) / rest);
  return tg_uniform(shape, ndim, -bound, bound, dtype);
}

tg_tensor *tg_kaiming_normal(const int64_t *shape, size_t ndim, double a, tg_dtype dtype) {
  double rest;
  if (!check_init_shape("tg_kaiming_normal", shape, ndim, &rest)) return NULL;
  return tg_normal(shape, ndim, 0.0, sqrt(2.0 / (1 + a * a) / rest), dtype);
}

/* ---------------------------------------------------------------------------------------------- helpers */

/* A caller-owned reference on a stored copy of t (made in the constructor's scope) for the layer struct: every
 * parameter and buffer has storage of its own, so optimizers and BatchNorm can assign into it. */
static tg_tensor *own(tg_tensor *t) {
  tg_tensor *c = tg_contiguous(t);
  return c ? tg_retain(c) : NULL;
}

/* Realizes the non-NULL tensors of ts and marks those among the first nparams as trainable. */
static bool finish_params(tg_tensor **ts, size_t n, size_t nparams) {
  tg_tensor *live[8];
  size_t k = 0;
  for (size_t i = 0; i < n && k < 8; i++)
    if (ts[i]) live[k++] = ts[i];
  if (k && tg_realize_many(live, k) != TG_OK) return false;
  for (size_t i = 0; i < nparams && i < n; i++)
    if (ts[i] && tg_requires_grad(ts[i], true) != TG_OK) return false;
  return true;
}

/* Constructor argument checks: every size positive, so a layer never holds a zero-sized parameter by accident. */
static bool positive(const char *op, const char *what, int64_t v) {
  if (v > 0) return true;
  tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: %s must be positive, got %lld", op, what, (long long)v);
  return false;
}

/* State dict names are tinygrad's: "<prefix>.<attribute>" (prefix "" for a top-level layer), so a torch or tinygrad
 * checkpoint loads by name. */
static tg_status add_named(tg_state_dict *sd, const char *prefix, const char *attr, tg_tensor *t, bool is_param) {
  if (!t) return TG_OK; /* an absent optional tensor (bias=False, affine=False) */
  char name[512];
  if (prefix && prefix[0]) snprintf(name, sizeof name, "%s.%s", prefix, attr);
  else snprintf(name, sizeof name, "%s", attr);
  return tg_state_dict_add(sd, name, t, is_param);
}

static tg_status null_layer(const char *op) { return tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: NULL layer", op); }

/* ---------------------------------------------------------------------------------------------- Linear */

/* tinygrad nn.Linear: weight (out, in) and bias (out,) both uniform(-1/sqrt(in), 1/sqrt(in)), weight drawn first
 * (the draw order fixes the values a seeded program gets). */
tg_linear_layer *tg_linear_new(int64_t in_features, int64_t out_features, bool bias) {
  if (!positive("tg_linear_new", "in_features", in_features) || !positive("tg_linear_new", "out_features", out_features))
    return NULL;
  tg_linear_layer *l = tg_calloc(1, sizeof *l);
  l->in_features = in_features;
  l->out_features = out_features;
  double bound = 1 / sqrt((double)in_features);
  tg_scope s = tg_scope_begin();
  l->weight = own(tg_uniform(TG_SHAPE(out_features, in_features), -bound, bound, TG_VOID));
  if (bias) l->bias = own(tg_uniform(TG_SHAPE(out_features), -bound, bound, TG_VOID));
  tg_scope_end(s);
  tg_tensor *ps[2] = {l->weight, l->bias};
  if (!l->weight || (bias && !l->bias) || !finish_params(ps, 2, 2)) { tg_linear_free(l); return NULL; }
  return l;
}

void tg_linear_free(tg_linear_layer *l) {
  if (!l) return;
  tg_release(l->weight);
  tg_release(l->bias);
  tg_free(l);
}

/* x @ weight.T + bias: the (out, in) weight is transposed as a view, no copy. */
tg_tensor *tg_linear_forward(const tg_linear_layer *l, const tg_tensor *x) {
  if (!l) { null_layer("tg_linear_forward"); return NULL; }
  tg_scope s = tg_scope_begin();
  return nn_finish(s, tg_linear(x, tg_transpose(l->weight, 0, 1), l->bias));
}

tg_status tg_linear_state(const tg_linear_layer *l, const char *prefix, tg_state_dict *sd) {
  if (!l || !sd) return null_layer("tg_linear_state");
  tg_status st = add_named(sd, prefix, "weight", l->weight, true);
  return st == TG_OK ? add_named(sd, prefix, "bias", l->bias, true) : st;
}

/* ---------------------------------------------------------------------------------------------- Conv2d */

/* Conv2d and ConvTranspose2d share the constructor: tinygrad's uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) weight and
 * bias, fan_in = in_channels * kh * kw, the transposed weight laid out (in, out/groups, kh, kw). */
static tg_conv2d_layer *conv_new(const char *op, int64_t in_ch, int64_t out_ch, const int64_t kernel[2],
                                 const tg_conv2d_options *opt, bool transposed) {
  static const tg_conv2d_options defaults = {{0, 0}, {0, 0}, {0, 0}, {0, 0}, 0, false, false};
  if (!opt) opt = &defaults;
  if (!kernel) { tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: NULL kernel", op); return NULL; }
  int groups = opt->groups ? opt->groups : 1;
  if (!positive(op, "in_channels", in_ch) || !positive(op, "out_channels", out_ch) || !positive(op, "kernel", kernel[0]) ||
      !positive(op, "kernel", kernel[1]) || !positive(op, "groups", groups))
    return NULL;
  if (in_ch % groups || out_ch % groups) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: channels %lld -> %lld must be divisible by groups %d", op,
                 (long long)in_ch, (long long)out_ch, groups);
    return NULL;
  }
  tg_conv2d_layer *l = tg_calloc(1, sizeof *l);
  for (int i = 0; i < 2; i++) {
    l->kernel[i] = kernel[i];
    l->stride[i] = opt->stride[i] ? opt->stride[i] : 1;
    l->dilation[i] = opt->dilation[i] ? opt->dilation[i] : 1;
    l->padding[i] = opt->padding[i];
    l->output_padding[i] = opt->output_padding[i];
    if (l->stride[i] < 1 || l->dilation[i] < 1 || l->padding[i] < 0 || l->output_padding[i] < 0) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: stride and dilation must be >= 1, padding >= 0", op);
      tg_free(l);
      return NULL;
    }
  }
  l->groups = groups;
  l->padding_same = opt->padding_same;
  l->transposed = transposed;
  if (l->padding_same && (transposed || l->stride[0] != 1 || l->stride[1] != 1)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: padding='same' is not supported for strided or transposed convolutions",
                 op);
    tg_free(l);
    return NULL;
  }
  double scale = 1 / sqrt((double)in_ch * (double)(kernel[0] * kernel[1]));
  tg_scope s = tg_scope_begin();
  /* tinygrad's ConvTranspose2d runs Conv2d's constructor first (drawing its weight and bias), then draws its own
   * weight: the same draws keep the random stream identical */
  l->weight = own(tg_uniform(TG_SHAPE(out_ch, in_ch / groups, kernel[0], kernel[1]), -scale, scale, TG_VOID));
  if (!opt->no_bias) l->bias = own(tg_uniform(TG_SHAPE(out_ch), -scale, scale, TG_VOID));
  if (transposed) {
    tg_release(l->weight);
    l->weight = own(tg_uniform(TG_SHAPE(in_ch, out_ch / groups, kernel[0], kernel[1]), -scale, scale, TG_VOID));
  }
  tg_scope_end(s);
  tg_tensor *ps[2] = {l->weight, l->bias};
  if (!l->weight || (!opt->no_bias && !l->bias) || !finish_params(ps, 2, 2)) { tg_conv2d_free(l); return NULL; }
  return l;
}

tg_conv2d_layer *tg_conv2d_new(int64_t in_ch, int64_t out_ch, const int64_t kernel[2], const tg_conv2d_options *opt) {
  return conv_new("tg_conv2d_new", in_ch, out_ch, kernel, opt, false);
}

tg_conv2d_layer *tg_conv_transpose2d_new(int64_t in_ch, int64_t out_ch, const int64_t kernel[2],
                                         const tg_conv2d_options *opt) {
  return conv_new("tg_conv_transpose2d_new", in_ch, out_ch, kernel, opt, true);
}

void tg_conv2d_free(tg_conv2d_layer *l) {
  if (!l) return;
  tg_release(l->weight);
  tg_release(l->bias);
  tg_free(l);
}

/* Forward by layer kind: transposed, plain (symmetric padding), or padding='same' (asymmetric when the kernel size
 * is even). */
tg_tensor *tg_conv2d_forward(const tg_conv2d_layer *l, const tg_tensor *x) {
  if (!l) { null_layer("tg_conv2d_forward"); return NULL; }
  if (l->transposed)
    return tg_conv_transpose2d(x, l->weight, l->bias, l->groups, l->stride, l->padding, l->dilation,
                               l->output_padding);
  if (!l->padding_same) return tg_conv2d(x, l->weight, l->bias, l->groups, l->stride, l->padding, l->dilation);
  /* tinygrad's 'same': total d*(k-1) per axis, the smaller half before. Its list pairs make_tuple(dilation) with the
   * reversed kernel (W's padding uses dilation[0]); the pairing is kept as tinygrad has it. */
  int64_t before[2], after[2];
  for (int i = 0; i < 2; i++) {
    int64_t total = l->dilation[1 - i] * (l->kernel[i] - 1);
    before[i] = total / 2;
    after[i] = total - total / 2;
  }
  return nn_conv2d_padded(x, l->weight, l->bias, l->groups, l->stride, l->dilation, before, after);
}

tg_status tg_conv2d_state(const tg_conv2d_layer *l, const char *prefix, tg_state_dict *sd) {
  if (!l || !sd) return null_layer("tg_conv2d_state");
  tg_status st = add_named(sd, prefix, "weight", l->weight, true);
  return st == TG_OK ? add_named(sd, prefix, "bias", l->bias, true) : st;
}

/* ---------------------------------------------------------------------------------------------- BatchNorm */

/* tinygrad nn.BatchNorm: weight 1 and bias 0 (affine), running mean 0 and variance 1, num_batches_tracked 0 (an
 * int64 scalar); only weight and bias are parameters. */
tg_batchnorm_layer *tg_batchnorm_new(int64_t size, double eps, double momentum, bool affine, bool track_running_stats) {
  if (!positive("tg_batchnorm_new", "size", size)) return NULL;
  tg_batchnorm_layer *l = tg_calloc(1, sizeof *l);
  l->size = size;
  l->eps = eps;
  l->momentum = momentum;
  l->affine = affine;
  l->track_running_stats = track_running_stats;
  tg_scope s = tg_scope_begin();
  if (affine) {
    l->weight = own(tg_ones(TG_SHAPE(size), TG_VOID));
    l->bias = own(tg_zeros(TG_SHAPE(size), TG_VOID));
  }
  l->num_batches_tracked = own(tg_zeros(NULL, 0, TG_INT64));
  if (track_running_stats) {
    l->running_mean = own(tg_zeros(TG_SHAPE(size), TG_VOID));
    l->running_var = own(tg_ones(TG_SHAPE(size), TG_VOID));
  }
  tg_scope_end(s);
  tg_tensor *ps[5] = {l->weight, l->bias, l->num_batches_tracked, l->running_mean, l->running_var};
  bool ok = l->num_batches_tracked && (!affine || (l->weight && l->bias)) &&
            (!track_running_stats || (l->running_mean && l->running_var));
  if (!ok || !finish_params(ps, 5, 2)) { tg_batchnorm_free(l); return NULL; }
  return l;
}

void tg_batchnorm_free(tg_batchnorm_layer *l) {
  if (!l) return;
  tg_release(l->weight);
  tg_release(l->bias);
  tg_release(l->running_mean);
  tg_release(l->running_var);
  tg_release(l->num_batches_tracked);
  tg_free(l);
}

/* Training (or no running statistics): normalize by the batch's mean and biased variance over every axis but the
 * channel one, and (tracking) move the running statistics by `momentum`, the variance unbiased by n/(n-1) as torch
 * and tinygrad do. Evaluation: the running statistics. The running updates are assigns into the buffers: they run
 * when those buffers are next realized, as tinygrad's. */
tg_tensor *tg_batchnorm_forward(tg_batchnorm_layer *l, const tg_tensor *x) {
  if (!l) { null_layer("tg_batchnorm_forward"); return NULL; }
  int nd = tg_ndim(x);
  if (nd < 0) return NULL;
  if (nd < 2 || tg_shape(x)[1] != l->size) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_batchnorm_forward: expected (N, %lld, ...) input, got %d dims%s",
                 (long long)l->size, nd, nd >= 2 ? " with another channel count" : "");
    return NULL;
  }
  bool training = tg_is_training();
  int64_t mask_shape[TG_MAX_DIMS];
  int reduce_axes[TG_MAX_DIMS];
  size_t nred = 0;
  for (int i = 0; i < nd; i++) {
    mask_shape[i] = i == 1 ? -1 : 1;
    if (i != 1) reduce_axes[nred++] = i;
  }
  int64_t numel = tg_numel(x), channels = tg_shape(x)[1];
  if (l->track_running_stats && training && numel == channels) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_batchnorm_forward: training needs more than one value per channel");
    return NULL;
  }
  tg_scope s = tg_scope_begin();
  tg_tensor *mean, *var;
  if (l->track_running_stats && !training) {
    mean = l->running_mean;
    var = tg_reshape(l->running_var, mask_shape, (size_t)nd);
  } else {
    mean = tg_mean(x, reduce_axes, nred, false);
    tg_tensor *y = tg_sub(x, tg_reshape(tg_detach(mean), mask_shape, (size_t)nd)); /* d(var)/d(mean) = 0 */
    var = tg_mean(tg_mul(y, y), reduce_axes, nred, false);
  }
  if (l->track_running_stats && training && mean && var) {
    double m = l->momentum;
    tg_tensor *rm = tg_add(tg_mul(tg_const_float(1 - m), l->running_mean), tg_mul(tg_const_float(m), tg_detach(mean)));
    double f = m * (double)numel / (double)(numel - channels);
    tg_tensor *rv = tg_add(tg_mul(tg_const_float(1 - m), l->running_var), tg_mul(tg_const_float(f), tg_detach(var)));
    tg_tensor *nb = tg_add(l->num_batches_tracked, tg_const_int(1));
    if (!rm || !rv || !nb || tg_assign(l->running_mean, rm) != TG_OK || tg_assign(l->running_var, rv) != TG_OK ||
        tg_assign(l->num_batches_tracked, nb) != TG_OK) {
      tg_scope_end(s);
      return NULL;
    }
  }
  tg_tensor *r = tg_batchnorm(x, l->weight, l->bias, mean, tg_rsqrt(tg_add(var, tg_const_float(l->eps))), TG_AXES(1));
  return nn_finish(s, r);
}

tg_status tg_batchnorm_state(const tg_batchnorm_layer *l, const char *prefix, tg_state_dict *sd) {
  if (!l || !sd) return null_layer("tg_batchnorm_state");
  /* tinygrad's attribute order: weight, bias, num_batches_tracked, running_mean, running_var */
  tg_status st = add_named(sd, prefix, "weight", l->weight, true);
  if (st == TG_OK) st = add_named(sd, prefix, "bias", l->bias, true);
  if (st == TG_OK) st = add_named(sd, prefix, "num_batches_tracked", l->num_batches_tracked, false);
  if (st == TG_OK) st = add_named(sd, prefix, "running_mean", l->running_mean, false);
  if (st == TG_OK) st = add_named(sd, prefix, "running_var", l->running_var, false);
  return st;
}

/* ---------------------------------------------------------------------------------------------- LayerNorm */

/* tinygrad nn.LayerNorm: normalizes over the trailing normalized_shape axes; weight 1 and bias 0 of that shape. */
tg_layernorm_layer *tg_layernorm_new(const int64_t *normalized_shape, size_t ndim, double eps, bool elementwise_affine) {
  if (!normalized_shape || ndim < 1 || ndim > TG_MAX_DIMS) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_layernorm_new: normalized_shape needs 1 to %d sizes", TG_MAX_DIMS);
    return NULL;
  }
  for (size_t i = 0; i < ndim; i++)
    if (!positive("tg_layernorm_new", "normalized_shape", normalized_shape[i])) return NULL;
  tg_layernorm_layer *l = tg_calloc(1, sizeof *l);
  memcpy(l->normalized_shape, normalized_shape, ndim * sizeof *normalized_shape);
  l->ndim = ndim;
  l->eps = eps;
  if (elementwise_affine) {
    tg_scope s = tg_scope_begin();
    l->weight = own(tg_ones(normalized_shape, ndim, TG_VOID));
    l->bias = own(tg_zeros(normalized_shape, ndim, TG_VOID));
    tg_scope_end(s);
    tg_tensor *ps[2] = {l->weight, l->bias};
    if (!l->weight || !l->bias || !finish_params(ps, 2, 2)) { tg_layernorm_free(l); return NULL; }
  }
  return l;
}

void tg_layernorm_free(tg_layernorm_layer *l) {
  if (!l) return;
  tg_release(l->weight);
  tg_release(l->bias);
  tg_free(l);
}

tg_tensor *tg_layernorm_forward(const tg_layernorm_layer *l, const tg_tensor *x) {
  if (!l) { null_layer("tg_layernorm_forward"); return NULL; }
  int nd = tg_ndim(x);
  if (nd < 0) return NULL;
  bool ok = nd >= (int)l->ndim;
  for (size_t i = 0; ok && i < l->ndim; i++) ok = tg_shape(x)[nd - (int)l->ndim + (int)i] == l->normalized_shape[i];
  if (!ok) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_layernorm_forward: the last %zu dimensions of the input must match "
                 "normalized_shape", l->ndim);
    return NULL;
  }
  int axes[TG_MAX_DIMS];
  for (size_t i = 0; i < l->ndim; i++) axes[i] = -1 - (int)i;
  tg_scope s = tg_scope_begin();
  tg_tensor *r = tg_layernorm(x, axes, l->ndim, l->eps);
  if (l->weight && l->bias) r = tg_add(tg_mul(r, l->weight), l->bias);
  return nn_finish(s, r);
}

tg_status tg_layernorm_state(const tg_layernorm_layer *l, const char *prefix, tg_state_dict *sd) {
  if (!l || !sd) return null_layer("tg_layernorm_state");
  tg_status st = add_named(sd, prefix, "weight", l->weight, true);
  return st == TG_OK ? add_named(sd, prefix, "bias", l->bias, true) : st;
}

/* ---------------------------------------------------------------------------------------------- RMSNorm */

/* tinygrad nn.RMSNorm: rms_norm over the last axis times a weight of ones. */
tg_rmsnorm_layer *tg_rmsnorm_new(int64_t dim, double eps, bool elementwise_affine) {
  if (!positive("tg_rmsnorm_new", "dim", dim)) return NULL;
  tg_rmsnorm_layer *l = tg_calloc(1, sizeof *l);
  l->dim = dim;
  l->eps = eps;
  if (elementwise_affine) {
    tg_scope s = tg_scope_begin();
    l->weight = own(tg_ones(TG_SHAPE(dim), TG_VOID));
    tg_scope_end(s);
    tg_tensor *ps[1] = {l->weight};
    if (!l->weight || !finish_params(ps, 1, 1)) { tg_rmsnorm_free(l); return NULL; }
  }
  return l;
}

void tg_rmsnorm_free(tg_rmsnorm_layer *l) {
  if (!l) return;
  tg_release(l->weight);
  tg_free(l);
}

tg_tensor *tg_rmsnorm_forward(const tg_rmsnorm_layer *l, const tg_tensor *x) {
  if (!l) { null_layer("tg_rmsnorm_forward"); return NULL; }
  tg_scope s = tg_scope_begin();
  tg_tensor *r = tg_rms_norm(x, l->eps);
  if (l->weight) r = tg_mul(r, l->weight);
  return nn_finish(s, r);
}

tg_status tg_rmsnorm_state(const tg_rmsnorm_layer *l, const char *prefix, tg_state_dict *sd) {
  if (!l || !sd) return null_layer("tg_rmsnorm_state");
  return add_named(sd, prefix, "weight", l->weight, true);
}

/* ---------------------------------------------------------------------------------------------- GroupNorm */

/* tinygrad nn.GroupNorm: channels split into groups, each (group, rest) normalized like a layernorm, then a
 * per-channel affine. */
tg_groupnorm_layer *tg_groupnorm_new(int64_t num_groups, int64_t num_channels, double eps, bool affine) {
  if (!positive("tg_groupnorm_new", "num_groups", num_groups) ||
      !positive("tg_groupnorm_new", "num_channels", num_channels))
    return NULL;
  if (num_channels % num_groups) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_groupnorm_new: %lld channels do not split into %lld groups",
                 (long long)num_channels, (long long)num_groups);
    return NULL;
  }
  tg_groupnorm_layer *l = tg_calloc(1, sizeof *l);
  l->num_groups = num_groups;
  l->num_channels = num_channels;
  l->eps = eps;
  if (affine) {
    tg_scope s = tg_scope_begin();
    l->weight = own(tg_ones(TG_SHAPE(num_channels), TG_VOID));
    l->bias = own(tg_zeros(TG_SHAPE(num_channels), TG_VOID));
    tg_scope_end(s);
    tg_tensor *ps[2] = {l->weight, l->bias};
    if (!l->weight || !l->bias || !finish_params(ps, 2, 2)) { tg_groupnorm_free(l); return NULL; }
  }
  return l;
}

void tg_groupnorm_free(tg_groupnorm_layer *l) {
  if (!l) return;
  tg_release(l->weight);
  tg_release(l->bias);
  tg_free(l);
}

/* (N, C, ...) -> (N, groups, C/groups * rest) -> layernorm over the last axis -> back to x's shape. */
tg_tensor *tg_groupnorm_forward(const tg_groupnorm_layer *l, const tg_tensor *x) {
  if (!l) { null_layer("tg_groupnorm_forward"); return NULL; }
  int nd = tg_ndim(x);
  if (nd < 0) return NULL;
  if (nd < 2 || tg_shape(x)[1] != l->num_channels) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_groupnorm_forward: expected (N, %lld, ...) input",
                 (long long)l->num_channels);
    return NULL;
  }
  int64_t bshape[TG_MAX_DIMS];
  bshape[0] = 1;
  bshape[1] = -1;
  for (int i = 2; i < nd; i++) bshape[i] = 1;
  tg_scope s = tg_scope_begin();
  tg_tensor *r = tg_reshape(x, TG_SHAPE(tg_shape(x)[0], l->num_groups, -1));
  r = tg_reshape(tg_layernorm(r, NULL, 0, l->eps), tg_shape(x), (size_t)nd);
  if (l->weight && l->bias)
    r = tg_add(tg_mul(r, tg_reshape(l->weight, bshape, (size_t)nd)), tg_reshape(l->bias, bshape, (size_t)nd));
  return nn_finish(s, r);
}

tg_status tg_groupnorm_state(const tg_groupnorm_layer *l, const char *prefix, tg_state_dict *sd) {
  if (!l || !sd) return null_layer("tg_groupnorm_state");
  tg_status st = add_named(sd, prefix, "weight", l->weight, true);
  return st == TG_OK ? add_named(sd, prefix, "bias", l->bias, true) : st;
}

/* ---------------------------------------------------------------------------------------------- Embedding */

/* tinygrad nn.Embedding: a (vocab, embed) glorot-uniform weight. */
tg_embedding_layer *tg_embedding_new(int64_t vocab_size, int64_t embed_size) {
  if (!positive("tg_embedding_new", "vocab_size", vocab_size) || !positive("tg_embedding_new", "embed_size", embed_size))
    return NULL;
  tg_embedding_layer *l = tg_calloc(1, sizeof *l);
  l->vocab_size = vocab_size;
  l->embed_size = embed_size;
  tg_scope s = tg_scope_begin();
  l->weight = own(tg_glorot_uniform(TG_SHAPE(vocab_size, embed_size), TG_VOID));
  tg_scope_end(s);
  tg_tensor *ps[1] = {l->weight};
  if (!l->weight || !finish_params(ps, 1, 1)) { tg_embedding_free(l); return NULL; }
  return l;
}

void tg_embedding_free(tg_embedding_layer *l) {
  if (!l) return;
  tg_release(l->weight);
  tg_free(l);
}

/* tinygrad's Embedding lookup is arithmetic, not a gather: compare every index with arange(vocab) and sum the
 * selected rows. One fused kernel per use, and the gradient is the same graph transposed (no scatter needed). */
tg_tensor *tg_embedding_forward(const tg_embedding_layer *l, const tg_tensor *idx) {
  if (!l) { null_layer("tg_embedding_forward"); return NULL; }
  if (!idx) return NULL;
  tg_dtype d = tg_get_dtype(idx);
  if (d == TG_BOOL || d < TG_WEAKINT || d > TG_UINT64) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_embedding_forward: expected an integer index tensor, got %s",
                 tg_dtype_name(d));
    return NULL;
  }
  tg_scope s = tg_scope_begin();
  /* (arange(vocab) == idx[..., None])[..., None] selects rows of weight; the sum over vocab gathers them */
  tg_tensor *hit = tg_eq(tg_arange(0, (double)l->vocab_size, 1, TG_VOID), tg_unsqueeze(idx, -1));
  tg_tensor *r = tg_sum(tg_where(tg_unsqueeze(hit, -1), l->weight, tg_const_int(0)), TG_AXES(-2), false);
  return nn_finish(s, tg_cast(r, tg_get_dtype(l->weight)));
}

tg_status tg_embedding_state(const tg_embedding_layer *l, const char *prefix, tg_state_dict *sd) {
  if (!l || !sd) return null_layer("tg_embedding_state");
  return add_named(sd, prefix, "weight", l->weight, true);
}
