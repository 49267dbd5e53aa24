/* test_grad_parity.c — gradient parity with PyTorch: every case of the gradient fixtures (tests/fixtures/grad_*.tgf,
 * written by tools/gen_grad_fixtures.py, whose header documents the layout) is built through the public API from its
 * host inputs and views, then differentiated: loss = sum_k sum(out_k * upstream_k), and the gradients of the listed
 * inputs (the stored tensors, before their views) are taken with tg_gradient (odd cases) or tg_requires_grad +
 * tg_backward + tg_grad (even cases), realized and compared with torch autograd's (float64 truth rounded to the
 * stored dtype) within the case's atol/rtol. The forward outputs are compared too. Each failing case is reported by
 * name. TG_GRAD_ONLY=<substring> runs only the cases whose name contains it.
 *
 * The nn layers (Linear, BatchNorm in training, LayerNorm, RMSNorm, GroupNorm, Embedding: the layer structs of the
 * nn API with their parameters replaced by the stored inputs), conv_transpose2d, scaled_dot_product_attention and the
 * functional losses go through the nn API. */
#include <stdlib.h>

#include "fixture.h"
#include "test.h"
#include "tinygrad.h"

static const char *const grad_groups[] = {"grad_elementwise", "grad_reduce", "grad_movement",
                                          "grad_nn",          "grad_layers", "grad_losses"};

static const tg_dtype tg_of[TF_DTYPE_COUNT] = {TG_BOOL,   TG_INT8,   TG_UINT8,    TG_INT16,   TG_UINT16,
                                                TG_INT32,  TG_UINT32, TG_INT64,    TG_UINT64,  TG_FLOAT16,
                                                TG_BFLOAT16, TG_FLOAT32, TG_FLOAT64};

typedef struct grad_ctx {
  const tf_case *c;
  int nin;                        /* the op's inputs (the upstream gradients follow them) */
  tg_tensor *leaf[TF_MAX_TENSORS]; /* the stored inputs: gradients are taken w.r.t. these */
  tg_tensor *in[TF_MAX_TENSORS];   /* after the views */
  tg_tensor *out[TF_MAX_TENSORS];
  int nout;
} grad_ctx;

/* ------------------------------------------------------------------------------------------------ parameters */
static double param_or(const tf_case *c, const char *key, double dflt) {
  double v;
  return tf_param_double(c, key, &v) ? v : dflt;
}
static int64_t iparam_or(const tf_case *c, const char *key, int64_t dflt) {
  int64_t v;
  return tf_param_int(c, key, &v) ? v : dflt;
}
static bool param_pair(const tf_case *c, const char *key, int64_t out[2]) {
  size_t n = 0;
  if (!tf_param_ints(c, key, out, 2, &n)) return false;
  if (n == 1) out[1] = out[0];
  return true;
}
static bool param_is(const tf_case *c, const char *key, const char *word) {
  char buf[32];
  return tf_param_str(c, key, buf, sizeof buf) && strcmp(buf, word) == 0;
}

static tg_tensor *apply_view(tg_tensor *t, const char *view) {
  tf_view_op ops[8];
  int n = tf_parse_view(view, ops, 8);
  for (int i = 0; i < n && t; i++) {
    const tf_view_op *op = &ops[i];
    int axes[TF_MAX_DIMS];
    for (size_t k = 0; k < op->nargs && k < TF_MAX_DIMS; k++) axes[k] = (int)op->args[k];
    if (strcmp(op->name, "permute") == 0) t = tg_permute(t, axes, op->nargs);
    else if (strcmp(op->name, "flip") == 0) t = tg_flip(t, axes, op->nargs);
    else if (strcmp(op->name, "shrink") == 0) t = tg_shrink(t, op->args, op->nargs / 2);
    else if (strcmp(op->name, "expand") == 0) t = tg_expand(t, op->args, op->nargs);
    else return NULL;
  }
  return n < 0 ? NULL : t;
}

/* ------------------------------------------------------------------------------------------------ core ops */
typedef tg_tensor *(*unary_fn)(const tg_tensor *);
typedef tg_tensor *(*binary_fn)(const tg_tensor *, const tg_tensor *);
typedef tg_tensor *(*reduce_fn)(const tg_tensor *, const int *, size_t, bool);

static const struct { const char *op; unary_fn fn; } unary_ops[] = {
    {"neg", tg_neg}, {"abs", tg_abs}, {"sign", tg_sign}, {"exp", tg_exp}, {"exp2", tg_exp2}, {"log", tg_log},
    {"log2", tg_log2}, {"log10", tg_log10}, {"sqrt", tg_sqrt}, {"rsqrt", tg_rsqrt}, {"reciprocal", tg_reciprocal},
    {"square", tg_square}, {"sin", tg_sin}, {"cos", tg_cos}, {"tan", tg_tan}, {"asin", tg_asin}, {"acos", tg_acos},
    {"atan", tg_atan}, {"sinh", tg_sinh}, {"cosh", tg_cosh}, {"tanh", tg_tanh}, {"asinh", tg_asinh},
    {"acosh", tg_acosh}, {"atanh", tg_atanh}, {"trunc", tg_trunc}, {"floor", tg_floor}, {"ceil", tg_ceil},
    {"round", tg_round}, {"relu", tg_relu}, {"relu6", tg_relu6}, {"sigmoid", tg_sigmoid},
    {"logsigmoid", tg_logsigmoid}, {"hardsigmoid", tg_hardsigmoid}, {"hardswish", tg_hardswish}, {"gelu", tg_gelu},
    {"quick_gelu", tg_quick_gelu}, {"silu", tg_silu}, {"swish", tg_swish}, {"mish", tg_mish},
    {"softsign", tg_softsign}, {"erf", tg_erf}, {"selu", tg_selu}, {"contiguous", tg_contiguous},
};
static const struct { const char *op; binary_fn fn; } binary_ops[] = {
    {"add", tg_add}, {"sub", tg_sub}, {"mul", tg_mul}, {"div", tg_div}, {"pow", tg_pow}, {"maximum", tg_maximum},
    {"minimum", tg_minimum}, {"logaddexp", tg_logaddexp}, {"matmul", tg_matmul}, {"dot", tg_dot},
};
static const struct { const char *op; reduce_fn fn; } reduce_ops[] = {
    {"sum", tg_sum}, {"prod", tg_prod}, {"max", tg_max}, {"min", tg_min}, {"mean", tg_mean},
};

static tg_tensor *scalar_operand(const tf_case *c) {
  if (tf_param_is_float(c, "scalar")) return tg_const_float(param_or(c, "scalar", 0));
  return tg_const_int(iparam_or(c, "scalar", 0));
}

static bool run_elementwise(grad_ctx *x) {
  const tf_case *c = x->c;
  tg_tensor *a = x->in[0];
  for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
    if (strcmp(c->op, unary_ops[i].op) == 0) return (x->out[0] = unary_ops[i].fn(a)), true;
  for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++)
    if (strcmp(c->op, binary_ops[i].op) == 0) {
      if (x->nin == 2) x->out[0] = binary_ops[i].fn(a, x->in[1]);
      else if (iparam_or(c, "reverse", 0)) x->out[0] = binary_ops[i].fn(scalar_operand(c), a);
      else x->out[0] = binary_ops[i].fn(a, scalar_operand(c));
      return true;
    }
  if (strcmp(c->op, "softplus") == 0) x->out[0] = tg_softplus(a, param_or(c, "beta", 1.0));
  else if (strcmp(c->op, "leaky_relu") == 0) x->out[0] = tg_leaky_relu(a, param_or(c, "neg_slope", 0.01));
  else if (strcmp(c->op, "elu") == 0) x->out[0] = tg_elu(a, param_or(c, "alpha", 1.0));
  else if (strcmp(c->op, "celu") == 0) x->out[0] = tg_celu(a, param_or(c, "alpha", 1.0));
  else if (strcmp(c->op, "hardtanh") == 0)
    x->out[0] = tg_hardtanh(a, param_or(c, "min_val", -1.0), param_or(c, "max_val", 1.0));
  else if (strcmp(c->op, "clamp") == 0) x->out[0] = tg_clamp(a, param_or(c, "min", NAN), param_or(c, "max", NAN));
  else if (strcmp(c->op, "where") == 0) x->out[0] = tg_where(a, x->in[1], x->in[2]);
  else if (strcmp(c->op, "lerp") == 0) x->out[0] = tg_lerp(a, x->in[1], x->in[2]);
  else if (strcmp(c->op, "masked_fill") == 0) {
    tg_tensor *value = tf_param_is_float(c, "value") ? tg_const_float(param_or(c, "value", 0))
                                                      : tg_const_int(iparam_or(c, "value", 0));
    x->out[0] = tg_masked_fill(a, x->in[1], value);
  } else if (strcmp(c->op, "cast") == 0) {
    char name[32];
    tf_dtype d;
    if (!tf_param_str(c, "dtype", name, sizeof name) || !tf_dtype_from_name(name, &d)) return false;
    x->out[0] = tg_cast(a, tg_of[d]);
  } else return false;
  return true;
}

static bool run_reduce(grad_ctx *x) {
  const tf_case *c = x->c;
  tg_tensor *a = x->in[0];
  int64_t v[TF_MAX_DIMS];
  int axes[TF_MAX_DIMS];
  size_t n = 0;
  bool all = !tf_param_ints(c, "axis", v, TF_MAX_DIMS, &n), keep = iparam_or(c, "keepdim", 0) != 0;
  for (size_t i = 0; i < n; i++) axes[i] = (int)v[i];
  const int *ax = all ? NULL : axes;
  for (size_t i = 0; i < sizeof reduce_ops / sizeof reduce_ops[0]; i++)
    if (strcmp(c->op, reduce_ops[i].op) == 0) return (x->out[0] = reduce_ops[i].fn(a, ax, n, keep)), true;
  if (strcmp(c->op, "var") == 0) x->out[0] = tg_var(a, ax, n, keep, param_or(c, "correction", 1));
  else if (strcmp(c->op, "std") == 0) x->out[0] = tg_std(a, ax, n, keep, param_or(c, "correction", 1));
  else if (strcmp(c->op, "logsumexp") == 0) x->out[0] = tg_logsumexp(a, axes[0], keep);
  else if (strcmp(c->op, "cumsum") == 0) x->out[0] = tg_cumsum(a, (int)iparam_or(c, "axis", 0));
  else if (strcmp(c->op, "softmax") == 0) x->out[0] = tg_softmax(a, (int)iparam_or(c, "axis", -1));
  else if (strcmp(c->op, "log_softmax") == 0) x->out[0] = tg_log_softmax(a, (int)iparam_or(c, "axis", -1));
  else return false;
  return true;
}

/* "start:stop:step" per dim, empty start/stop = Python's None */
static bool parse_slices(const char *text, tg_index *idx, size_t *n) {
  *n = 0;
  const char *p = text;
  while (*p && *n < TF_MAX_DIMS) {
    tg_index s = {TG_IDX_SLICE, 0, 0, 1, false, false, NULL};
    for (int part = 0; part < 3; part++) {
      char *end;
      long long v = strtoll(p, &end, 10);
      if (end != p) {
        if (part == 0) s.start = v, s.has_start = true;
        else if (part == 1) s.stop = v, s.has_stop = true;
        else s.step = v;
      }
      p = end;
      if (part == 2 || *p == ',' || *p == 0) break; /* missing trailing parts keep their defaults */
      if (*p != ':') return false;
      p++;
    }
    idx[(*n)++] = s;
    if (*p == ',') p++;
    else if (*p) return false;
  }
  return *p == 0;
}

static bool run_movement(grad_ctx *x) {
  const tf_case *c = x->c;
  tg_tensor *a = x->in[0];
  int64_t v[2 * TF_MAX_DIMS];
  int iv[TF_MAX_DIMS];
  size_t n = 0;
  char buf[256];
  if (strcmp(c->op, "reshape") == 0 || strcmp(c->op, "expand") == 0) {
    if (!tf_param_ints(c, "shape", v, TF_MAX_DIMS, &n)) n = 0;
    x->out[0] = c->op[0] == 'r' ? tg_reshape(a, v, n) : tg_expand(a, v, n);
  } else if (strcmp(c->op, "repeat") == 0) {
    if (!tf_param_ints(c, "repeats", v, TF_MAX_DIMS, &n)) return false;
    x->out[0] = tg_repeat(a, v, n);
  } else if (strcmp(c->op, "permute") == 0 || strcmp(c->op, "flip") == 0) {
    if (!tf_param_ints(c, c->op[0] == 'p' ? "order" : "axis", v, TF_MAX_DIMS, &n)) return false;
    for (size_t i = 0; i < n; i++) iv[i] = (int)v[i];
    x->out[0] = c->op[0] == 'p' ? tg_permute(a, iv, n) : tg_flip(a, iv, n);
  } else if (strcmp(c->op, "transpose") == 0) {
    x->out[0] = tg_transpose(a, (int)iparam_or(c, "dim0", 1), (int)iparam_or(c, "dim1", 0));
  } else if (strcmp(c->op, "pad") == 0) {
    if (!tf_param_ints(c, "pad", v, 2 * TF_MAX_DIMS, &n)) return false;
    tg_pad_mode mode = param_is(c, "mode", "reflect")     ? TG_PAD_REFLECT
                       : param_is(c, "mode", "replicate") ? TG_PAD_REPLICATE
                       : param_is(c, "mode", "circular")  ? TG_PAD_CIRCULAR
                                                          : TG_PAD_CONSTANT;
    x->out[0] = tg_pad(a, v, n / 2, mode, param_or(c, "value", 0.0));
  } else if (strcmp(c->op, "shrink") == 0) {
    if (!tf_param_ints(c, "shrink", v, 2 * TF_MAX_DIMS, &n)) return false;
    x->out[0] = tg_shrink(a, v, n / 2);
  } else if (strcmp(c->op, "squeeze") == 0) {
    int64_t d;
    x->out[0] = tf_param_int(c, "dim", &d) ? tg_squeeze(a, (int)d) : tg_squeeze_all(a);
  } else if (strcmp(c->op, "unsqueeze") == 0) {
    x->out[0] = tg_unsqueeze(a, (int)iparam_or(c, "dim", 0));
  } else if (strcmp(c->op, "flatten") == 0) {
    x->out[0] = tg_flatten(a, (int)iparam_or(c, "start_dim", 0), (int)iparam_or(c, "end_dim", -1));
  } else if (strcmp(c->op, "slice") == 0) {
    tg_index idx[TF_MAX_DIMS];
    if (!tf_param_str(c, "slice", buf, sizeof buf) || !parse_slices(buf, idx, &n)) return false;
    x->out[0] = tg_getitem(a, idx, n);
  } else if (strcmp(c->op, "index") == 0) {
    tg_index idx = TG_IT(x->in[1]);
    x->out[0] = tg_getitem(a, &idx, 1);
  } else if (strcmp(c->op, "cat") == 0 || strcmp(c->op, "stack") == 0) {
    int dim = (int)iparam_or(c, "dim", 0);
    const tg_tensor *ts[TF_MAX_TENSORS];
    for (int i = 0; i < x->nin; i++) ts[i] = x->in[i];
    x->out[0] = c->op[0] == 'c' ? tg_cat(ts, (size_t)x->nin, dim) : tg_stack(ts, (size_t)x->nin, dim);
  } else if (strcmp(c->op, "split") == 0 || strcmp(c->op, "chunk") == 0) {
    int dim = (int)iparam_or(c, "dim", 0), got;
    if (c->op[1] == 'p') {
      if (!tf_param_ints(c, "sizes", v, TF_MAX_DIMS, &n)) return false;
      got = n == 1 ? tg_split(a, v[0], dim, x->out, TF_MAX_TENSORS)
                   : tg_split_sizes(a, v, n, dim, x->out, TF_MAX_TENSORS);
    } else {
      got = tg_chunk(a, (int)iparam_or(c, "chunks", 1), dim, x->out, TF_MAX_TENSORS);
    }
    x->nout = got < 0 ? 0 : got;
  } else if (strcmp(c->op, "gather") == 0) {
    x->out[0] = tg_gather(a, (int)iparam_or(c, "dim", 0), x->in[1]);
  } else return false;
  return true;
}

static bool run_conv_pool(grad_ctx *x) {
  const tf_case *c = x->c;
  tg_tensor *a = x->in[0];
  int64_t stride[2] = {1, 1}, padding[2] = {0, 0}, dilation[2] = {1, 1}, kernel[2] = {2, 2};
  param_pair(c, "padding", padding);
  param_pair(c, "dilation", dilation);
  if (strcmp(c->op, "conv2d") == 0) {
    param_pair(c, "stride", stride);
    x->out[0] = tg_conv2d(a, x->in[1], x->nin > 2 ? x->in[2] : NULL, (int)iparam_or(c, "groups", 1), stride, padding,
                          dilation);
  } else if (strcmp(c->op, "max_pool2d") == 0 || strcmp(c->op, "avg_pool2d") == 0) {
    param_pair(c, "kernel_size", kernel);
    bool has_stride = param_pair(c, "stride", stride);
    if (c->op[0] == 'm') x->out[0] = tg_max_pool2d(a, kernel, has_stride ? stride : NULL, padding, dilation);
    else x->out[0] = tg_avg_pool2d(a, kernel, has_stride ? stride : NULL, padding, true);
  } else return false;
  return true;
}

/* ------------------------------------------------------------------------------------------------ layers, losses */
/* A layer struct of the nn API whose parameters are replaced by the case's stored inputs (tinygrad's tests set
 * layer.weight the same way); freed after the case. */
static void set_param(tg_tensor **slot, tg_tensor *value) {
  tg_release(*slot);
  *slot = tg_retain(value);
}

static tg_reduction reduction_of(const tf_case *c) {
  return param_is(c, "reduction", "none") ? TG_REDUCTION_NONE
         : param_is(c, "reduction", "sum") ? TG_REDUCTION_SUM
                                           : TG_REDUCTION_MEAN;
}

static bool run_layer(grad_ctx *x) {
  const tf_case *c = x->c;
  tg_tensor *a = x->in[0];
  double eps = param_or(c, "eps", 1e-5);
  if (strcmp(c->op, "linear") == 0) {
    /* weight stored (out, in) as tinygrad's Linear holds it */
    tg_linear_layer *l = tg_linear_new(tg_size(x->in[1], 1), tg_size(x->in[1], 0), x->nin > 2);
    if (!l) return true;
    set_param(&l->weight, x->in[1]);
    if (x->nin > 2) set_param(&l->bias, x->in[2]);
    x->out[0] = tg_linear_forward(l, a);
    tg_linear_free(l);
  } else if (strcmp(c->op, "batchnorm_train") == 0) {
    bool track = iparam_or(c, "track_running_stats", 1) != 0;
    tg_batchnorm_layer *l = tg_batchnorm_new(tg_size(a, 1), eps, 0.1, true, track);
    if (!l) return true;
    set_param(&l->weight, x->in[1]);
    set_param(&l->bias, x->in[2]);
    bool was = tg_set_training(true);
    x->out[0] = tg_batchnorm_forward(l, a);
    tg_set_training(was);
    tg_batchnorm_free(l);
  } else if (strcmp(c->op, "layernorm") == 0) {
    int nd = (int)iparam_or(c, "ndims", 1);
    tg_layernorm_layer *l = tg_layernorm_new(tg_shape(a) + tg_ndim(a) - nd, (size_t)nd, eps, true);
    if (!l) return true;
    set_param(&l->weight, x->in[1]);
    set_param(&l->bias, x->in[2]);
    x->out[0] = tg_layernorm_forward(l, a);
    tg_layernorm_free(l);
  } else if (strcmp(c->op, "rmsnorm") == 0) {
    tg_rmsnorm_layer *l = tg_rmsnorm_new(tg_size(a, -1), param_or(c, "eps", 1e-6), true);
    if (!l) return true;
    set_param(&l->weight, x->in[1]);
    x->out[0] = tg_rmsnorm_forward(l, a);
    tg_rmsnorm_free(l);
  } else if (strcmp(c->op, "groupnorm") == 0) {
    tg_groupnorm_layer *l = tg_groupnorm_new(iparam_or(c, "num_groups", 1), tg_size(a, 1), eps, true);
    if (!l) return true;
    set_param(&l->weight, x->in[1]);
    set_param(&l->bias, x->in[2]);
    x->out[0] = tg_groupnorm_forward(l, a);
    tg_groupnorm_free(l);
  } else if (strcmp(c->op, "embedding") == 0) {
    tg_tensor *w = x->in[1];
    tg_embedding_layer *l = tg_embedding_new(tg_size(w, 0), tg_size(w, 1));
    if (!l) return true;
    set_param(&l->weight, w);
    x->out[0] = tg_embedding_forward(l, a);
    tg_embedding_free(l);
  } else if (strcmp(c->op, "sdpa") == 0) {
    x->out[0] = tg_scaled_dot_product_attention(a, x->in[1], x->in[2], NULL, 0.0, iparam_or(c, "is_causal", 0) != 0);
  } else if (strcmp(c->op, "conv_transpose2d") == 0) {
    int64_t stride[2] = {1, 1}, padding[2] = {0, 0}, dilation[2] = {1, 1}, output_padding[2] = {0, 0};
    param_pair(c, "stride", stride);
    param_pair(c, "padding", padding);
    param_pair(c, "dilation", dilation);
    param_pair(c, "output_padding", output_padding);
    x->out[0] = tg_conv_transpose2d(a, x->in[1], x->nin > 2 ? x->in[2] : NULL, (int)iparam_or(c, "groups", 1), stride,
                                    padding, dilation, output_padding);
  } else return false;
  return true;
}

static bool run_loss(grad_ctx *x) {
  const tf_case *c = x->c;
  tg_tensor *a = x->in[0], *y = x->nin > 1 ? x->in[1] : NULL, *third = x->nin > 2 ? x->in[2] : NULL;
  tg_reduction red = reduction_of(c);
  int64_t ignore;
  if (strcmp(c->op, "cross_entropy") == 0)
    x->out[0] = tg_cross_entropy(a, y, red, param_or(c, "label_smoothing", 0.0));
  else if (strcmp(c->op, "sparse_categorical_crossentropy") == 0)
    x->out[0] = tg_sparse_categorical_crossentropy(a, y, iparam_or(c, "ignore_index", -1),
                                                   param_or(c, "label_smoothing", 0.0), red);
  else if (strcmp(c->op, "binary_crossentropy") == 0) x->out[0] = tg_binary_crossentropy(a, y, red);
  else if (strcmp(c->op, "binary_crossentropy_logits") == 0)
    x->out[0] = tg_binary_crossentropy_logits(a, y, red, third);
  else if (strcmp(c->op, "nll_loss") == 0) {
    bool has_ignore = tf_param_int(c, "ignore_index", &ignore);
    x->out[0] = tg_nll_loss(a, y, third, has_ignore, has_ignore ? ignore : 0, red);
  } else return false;
  return true;
}

static bool dispatch(grad_ctx *x) {
  x->nout = 1;
  return run_elementwise(x) || run_reduce(x) || run_movement(x) || run_conv_pool(x) || run_layer(x) || run_loss(x);
}

/* ------------------------------------------------------------------------------------------------ comparison */
static bool values_match(const tf_case *c, const tf_tensor *want, const uint8_t *got, char *why, size_t whylen) {
  for (int64_t i = 0; i < want->numel; i++) {
    double g = tf_get_double(want->dtype, got, i), e = tf_get_double(want->dtype, want->data, i);
    bool ok = isnan(e) ? isnan(g) : isinf(e) ? g == e : fabs(g - e) <= c->atol + c->rtol * fabs(e);
    if (!ok) {
      snprintf(why, whylen, "element %" PRId64 ": got %.9g, expected %.9g (atol %g, rtol %g)", i, g, e, c->atol,
               c->rtol);
      return false;
    }
  }
  return true;
}

static bool same_shape(const tg_tensor *t, const tf_tensor *want) {
  if (tg_ndim(t) != want->ndim) return false;
  for (int i = 0; i < want->ndim; i++)
    if (tg_shape(t)[i] != want->shape[i]) return false;
  return true;
}

/* compares one realized tensor with an expected one; what names it in the message */
static bool compare(const tf_case *c, tg_tensor *got, const tf_tensor *want, const char *what, char *why,
                    size_t whylen) {
  if (!got) return snprintf(why, whylen, "%s: error: %s", what, tg_last_error()), false;
  if (!same_shape(got, want)) return snprintf(why, whylen, "%s: wrong shape (ndim %d)", what, tg_ndim(got)), false;
  if (tg_get_dtype(got) != tg_of[want->dtype])
    return snprintf(why, whylen, "%s: dtype %s, expected %s", what, tg_dtype_name(tg_get_dtype(got)),
                    tf_dtype_name(want->dtype)), false;
  uint8_t *host = malloc(want->nbytes ? want->nbytes : 1);
  if (!host) return snprintf(why, whylen, "out of memory"), false;
  bool ok = tg_to_host(got, host, want->nbytes) == TG_OK;
  char inner[512] = "";
  if (!ok) snprintf(inner, sizeof inner, "realize/copy out: %s", tg_last_error());
  else ok = values_match(c, want, host, inner, sizeof inner);
  free(host);
  if (!ok) snprintf(why, whylen, "%s: %s", what, inner);
  return ok;
}

/* Runs one case (use_backward: through tg_backward/tg_grad, else tg_gradient). true when it passed. */
static bool run_case(const tf_case *c, bool use_backward, char *why, size_t whylen) {
  grad_ctx x;
  memset(&x, 0, sizeof x);
  x.c = c;
  int64_t wrt[TF_MAX_TENSORS];
  size_t nwrt = 0;
  int nout = (int)iparam_or(c, "nout", 1);
  if (!tf_param_ints(c, "wrt", wrt, TF_MAX_TENSORS, &nwrt) || nout < 1 || nout > c->ninputs ||
      c->noutputs != nout + (int)nwrt)
    return snprintf(why, whylen, "malformed gradient case (wrt/nout/counts)"), false;
  x.nin = c->ninputs - nout;
  for (int i = 0; i < c->ninputs; i++) {
    const tf_tensor *t = &c->inputs[i];
    x.leaf[i] = tg_from_data(t->data, tg_of[t->dtype], t->shape, (size_t)t->ndim);
    x.in[i] = apply_view(x.leaf[i], t->view);
    if (!x.in[i]) return snprintf(why, whylen, "input %d: %s", i, tg_last_error()), false;
  }
  for (size_t k = 0; k < nwrt; k++) {
    if (wrt[k] < 0 || wrt[k] >= x.nin) return snprintf(why, whylen, "wrt index out of range"), false;
    if (use_backward && tg_requires_grad(x.leaf[wrt[k]], true) != TG_OK)
      return snprintf(why, whylen, "requires_grad: %s", tg_last_error()), false;
  }
  if (!dispatch(&x)) return snprintf(why, whylen, "the harness has no dispatch for op %s", c->op), false;
  if (x.nout != nout) return snprintf(why, whylen, "%d outputs, expected %d: %s", x.nout, nout, tg_last_error()), false;
  /* loss = sum_k sum(out_k * upstream_k) */
  tg_tensor *loss = NULL;
  for (int k = 0; k < nout; k++) {
    if (!x.out[k]) return snprintf(why, whylen, "forward: %s", tg_last_error()), false;
    tg_tensor *term = tg_sum(tg_mul(x.out[k], x.in[x.nin + k]), NULL, 0, false);
    loss = loss ? tg_add(loss, term) : term;
  }
  tg_tensor *grads[TF_MAX_TENSORS] = {NULL};
  const char *path = use_backward ? "backward" : "gradient";
  if (use_backward) {
    if (tg_backward(loss) != TG_OK) return snprintf(why, whylen, "tg_backward: %s", tg_last_error()), false;
    for (size_t k = 0; k < nwrt; k++) grads[k] = tg_grad(x.leaf[wrt[k]]);
  } else {
    const tg_tensor *targets[TF_MAX_TENSORS];
    for (size_t k = 0; k < nwrt; k++) targets[k] = x.leaf[wrt[k]];
    if (tg_gradient(loss, targets, nwrt, grads) != TG_OK)
      return snprintf(why, whylen, "tg_gradient: %s", tg_last_error()), false;
  }
  /* realize the gradients together first (one schedule), then compare outputs and gradients */
  tg_tensor *all[2 * TF_MAX_TENSORS];
  size_t nall = 0;
  for (int k = 0; k < nout; k++) all[nall++] = x.out[k];
  for (size_t k = 0; k < nwrt; k++)
    if (grads[k]) all[nall++] = grads[k];
  if (tg_realize_many(all, nall) != TG_OK)
    return snprintf(why, whylen, "%s: realize: %s", path, tg_last_error()), false;
  char what[64];
  for (int k = 0; k < nout; k++) {
    snprintf(what, sizeof what, "output %d", k);
    if (!compare(c, x.out[k], &c->outputs[k], what, why, whylen)) return false;
  }
  for (size_t k = 0; k < nwrt; k++) {
    snprintf(what, sizeof what, "%s of input %" PRId64, use_backward ? "grad (backward)" : "gradient", wrt[k]);
    if (!grads[k]) return snprintf(why, whylen, "%s: no gradient", what), false;
    if (!compare(c, grads[k], &c->outputs[nout + (int)k], what, why, whylen)) return false;
  }
  if (use_backward)
    for (size_t k = 0; k < nwrt; k++) tg_zero_grad(x.leaf[wrt[k]]);
  return true;
}

/* ------------------------------------------------------------------------------------------------ the suite */
void suite_grad_parity(void);
void suite_grad_parity(void) {
  const char *dir = tf_dir(), *only = getenv("TG_GRAD_ONLY");
  size_t passed = 0, failed = 0, index = 0, live_before = tg_live_tensors();
  for (size_t g = 0; g < sizeof grad_groups / sizeof grad_groups[0]; g++) {
    char path[1200], err[256];
    tf_file f;
    snprintf(path, sizeof path, "%s/%s.tgf", dir, grad_groups[g]);
    bool loaded = tf_load(path, &f, err, sizeof err);
    CHECK_MSG(loaded, "%s: %s", path, err);
    for (size_t i = 0; loaded && i < f.ncases; i++, index++) {
      const tf_case *c = &f.cases[i];
      if (only && *only && !strstr(c->name, only)) continue;
      char why[4096] = "";
      tg_scope s = tg_scope_begin();
      bool passed_case = run_case(c, index % 2 == 0, why, sizeof why);
      tg_scope_end(s);
      if (passed_case) {
        passed++;
        tg_test_passed++;
      } else {
        failed++;
        tg_test_failed++;
        char *nl = strchr(why, '\n');
        if (nl) *nl = 0;
        fprintf(stderr, "  FAIL grad_parity %s/%s [%s %s]: %s\n", grad_groups[g], c->name, c->op, c->params, why);
      }
    }
    tf_free(&f);
  }
  /* tinygrad's WINO=1: the conv2d gradients again through the Winograd transforms (3x3, stride and dilation 1) */
  test_setenv("WINO", "1");
  for (size_t g = 0; g < sizeof grad_groups / sizeof grad_groups[0]; g++) {
    char path[1200], err[256];
    tf_file f;
    snprintf(path, sizeof path, "%s/%s.tgf", dir, grad_groups[g]);
    if (!tf_load(path, &f, err, sizeof err)) continue; /* reported above */
    for (size_t i = 0; i < f.ncases; i++) {
      const tf_case *c = &f.cases[i];
      if (strcmp(c->op, "conv2d") != 0 || c->inputs[1].ndim != 4 || c->inputs[1].shape[2] != 3) continue;
      char why[4096] = "";
      tg_scope s = tg_scope_begin();
      bool ok = run_case(c, i % 2 == 0, why, sizeof why);
      tg_scope_end(s);
      CHECK_MSG(ok, "WINO=1 grad_parity %s/%s [%s]: %s", grad_groups[g], c->name, c->params, why);
    }
    tf_free(&f);
  }
  test_unsetenv("WINO");
  CHECK_EQ_INT(tg_live_tensors(), live_before);
  printf("grad_parity: %zu cases passed, %zu failed (half through tg_backward, half through tg_gradient)\n", passed,
         failed);
}
