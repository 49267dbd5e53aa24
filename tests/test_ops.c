/* test_ops.c — op parity with PyTorch: every case of the golden fixtures (tests/fixtures, tools/gen_fixtures.py) is
 * built through the public API (include/tinygrad.h) from its host inputs and views, realized, copied out and compared
 * with the expected shape, dtype and values (floats within the case's atol/rtol, nan matching nan and inf exact;
 * integers and bools exact). Each failing case is reported by name. Also the kernel-count table of reference section
 * 6.5 (forward rows): expressions with tinygrad's kernel counts, built here for the scheduler's tests.
 * Two suites live here: SUITE(op_shapes) checks only the lazy results' shapes and dtypes (shape inference and type
 * promotion, no realize), SUITE(ops) realizes and compares the values. TG_OPS_ONLY=<substring> runs only the cases
 * whose name contains it, TG_OPS_VERBOSE=1 prints failures in full (compiler messages). */
#include <stdlib.h>

#include "fixture.h"
#include "kernel_counts.h"
#include "test.h"
#include "tinygrad.h"

static const tg_dtype tg_of[TF_DTYPE_COUNT] = {TG_BOOL,   TG_INT8,   TG_UINT8,    TG_INT16,   TG_UINT16,
                                                TG_INT32,  TG_UINT32, TG_INT64,    TG_UINT64,  TG_FLOAT16,
                                                TG_BFLOAT16, TG_FLOAT32, TG_FLOAT64};

/* ------------------------------------------------------------------------------------------------ dispatch helpers */
typedef struct op_ctx {
  const tf_case *c;
  tg_tensor *in[TF_MAX_TENSORS];
  tg_tensor *out[TF_MAX_TENSORS];
  int nout;
  bool realize;      /* false: build the lazy graph only (assign then skips its realizes) */
  char missing[160]; /* set when the API has no way to run this case */
} op_ctx;

static bool param_dtype(const tf_case *c, const char *key, tg_dtype *out) {
  char name[32];
  tf_dtype d;
  if (!tf_param_str(c, key, name, sizeof name) || !tf_dtype_from_name(name, &d)) return false;
  *out = tg_of[d];
  return true;
}
static double param_or(const tf_case *c, const char *key, double dflt) {
  double v;
  return tf_param_double(c, key, &v) ? v : dflt;
}
static int64_t iparam_or(const tf_case *c, const char *key, int64_t dflt) {
  int64_t v;
  return tf_param_int(c, key, &v) ? v : dflt;
}
/* a list parameter of up to n ints; a single value is repeated (conv/pool "stride=2" means (2, 2)) */
static bool param_pair(const tf_case *c, const char *key, int64_t out[2]) {
  size_t n = 0;
  if (!tf_param_ints(c, key, out, 2, &n)) return false;
  if (n == 1) out[1] = out[0];
  return true;
}
/* the "axis" parameter as int axes; *all is set when absent (reduce over everything) */
static size_t param_axes(const tf_case *c, int *axes, bool *all) {
  int64_t v[TF_MAX_DIMS];
  size_t n = 0;
  *all = !tf_param_ints(c, "axis", v, TF_MAX_DIMS, &n);
  for (size_t i = 0; i < n; i++) axes[i] = (int)v[i];
  return n;
}

/* the weak scalar operand of "scalar=..." */
static tg_tensor *scalar_operand(const tf_case *c) {
  if (tf_param_is_float(c, "scalar")) return tg_const_float(param_or(c, "scalar", 0));
  return tg_const_int(iparam_or(c, "scalar", 0));
}

static tg_tensor *apply_view(tg_tensor *t, const char *view) {
  tf_view_op ops[8];
  int n = tf_parse_view(view, ops, 8);
  for (int i = 0; i < n && t; i++) {
    const tf_view_op *op = &ops[i];
    if (strcmp(op->name, "permute") == 0) {
      int order[TF_MAX_DIMS];
      for (size_t k = 0; k < op->nargs; k++) order[k] = (int)op->args[k];
      t = tg_permute(t, order, op->nargs);
    } else if (strcmp(op->name, "flip") == 0) {
      int axes[TF_MAX_DIMS];
      for (size_t k = 0; k < op->nargs; k++) axes[k] = (int)op->args[k];
      t = tg_flip(t, axes, op->nargs);
    } else if (strcmp(op->name, "shrink") == 0) {
      t = tg_shrink(t, op->args, op->nargs / 2);
    } else if (strcmp(op->name, "expand") == 0) {
      t = tg_expand(t, op->args, op->nargs);
    } else {
      return NULL;
    }
  }
  return n < 0 ? NULL : t;
}

typedef tg_tensor *(*unary_fn)(const tg_tensor *);
typedef tg_tensor *(*binary_fn)(const tg_tensor *, const tg_tensor *);
typedef tg_tensor *(*reduce_fn)(const tg_tensor *, const int *, size_t, bool);

static const struct { const char *op; unary_fn fn; } unary_ops[] = {
    {"neg", tg_neg}, {"abs", tg_abs}, {"sign", tg_sign}, {"exp", tg_exp}, {"exp2", tg_exp2}, {"log", tg_log},
    {"log2", tg_log2}, {"sqrt", tg_sqrt}, {"rsqrt", tg_rsqrt}, {"reciprocal", tg_reciprocal}, {"square", tg_square},
    {"sin", tg_sin}, {"cos", tg_cos}, {"tan", tg_tan}, {"trunc", tg_trunc}, {"floor", tg_floor}, {"ceil", tg_ceil},
    {"round", tg_round}, {"isnan", tg_isnan}, {"isinf", tg_isinf}, {"isfinite", tg_isfinite}, {"relu", tg_relu},
    {"relu6", tg_relu6}, {"sigmoid", tg_sigmoid}, {"hardsigmoid", tg_hardsigmoid}, {"tanh", tg_tanh},
    {"gelu", tg_gelu}, {"quick_gelu", tg_quick_gelu}, {"silu", tg_silu}, {"swish", tg_swish},
    {"hardswish", tg_hardswish}, {"softsign", tg_softsign}, {"mish", tg_mish}, {"selu", tg_selu},
    {"logsigmoid", tg_logsigmoid}, {"erf", tg_erf}, {"sinh", tg_sinh}, {"cosh", tg_cosh},
    {"bitwise_not", tg_bitwise_not}, {"logical_not", tg_logical_not}, {"contiguous", tg_contiguous},
    {"log10", tg_log10}, {"asin", tg_asin}, {"acos", tg_acos}, {"atan", tg_atan}, {"asinh", tg_asinh},
    {"acosh", tg_acosh}, {"atanh", tg_atanh},
};
static const struct { const char *op; binary_fn fn; } binary_ops[] = {
    {"add", tg_add}, {"sub", tg_sub}, {"mul", tg_mul}, {"div", tg_div}, {"mod", tg_mod}, {"fmod", tg_fmod},
    {"pow", tg_pow}, {"maximum", tg_maximum}, {"minimum", tg_minimum}, {"lt", tg_lt}, {"le", tg_le}, {"gt", tg_gt},
    {"ge", tg_ge}, {"eq", tg_eq}, {"ne", tg_ne}, {"bitwise_and", tg_bitwise_and}, {"bitwise_or", tg_bitwise_or},
    {"bitwise_xor", tg_bitwise_xor}, {"lshift", tg_lshift}, {"rshift", tg_rshift}, {"matmul", tg_matmul},
    {"dot", tg_dot}, {"copysign", tg_copysign}, {"logaddexp", tg_logaddexp},
};
static const struct { const char *op; reduce_fn fn; } reduce_ops[] = {
    {"sum", tg_sum}, {"prod", tg_prod}, {"max", tg_max}, {"min", tg_min}, {"mean", tg_mean}, {"any", tg_any},
    {"all", tg_all},
};
static bool run_unary_like(op_ctx *x) {
  const tf_case *c = x->c;
  tg_tensor *a = x->in[0];
  for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
    if (strcmp(c->op, unary_ops[i].op) == 0) return (x->out[0] = unary_ops[i].fn(a)), true;
  for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++)
    if (strcmp(c->op, binary_ops[i].op) == 0) {
      if (c->ninputs == 2) x->out[0] = binary_ops[i].fn(a, x->in[1]);
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
  else if (strcmp(c->op, "div_round") == 0) {
    char mode[16] = "";
    tf_param_str(c, "rounding_mode", mode, sizeof mode);
    x->out[0] = tg_div_mode(a, x->in[1], strcmp(mode, "floor") == 0 ? TG_ROUND_FLOOR : TG_ROUND_TRUNC);
  } else if (strcmp(c->op, "cast") == 0 || strcmp(c->op, "bitcast") == 0) {
    tg_dtype d;
    if (!param_dtype(c, "dtype", &d)) return false;
    x->out[0] = c->op[0] == 'c' ? tg_cast(a, d) : tg_bitcast(a, d);
  } else return false;
  return true;
}

static bool run_reduce(op_ctx *x) {
  const tf_case *c = x->c;
  tg_tensor *a = x->in[0];
  int axes[TF_MAX_DIMS];
  bool all, keep = iparam_or(c, "keepdim", 0) != 0;
  size_t n = param_axes(c, axes, &all);
  const int *ax = all ? NULL : axes;
  for (size_t i = 0; i < sizeof reduce_ops / sizeof reduce_ops[0]; i++)
    if (strcmp(c->op, reduce_ops[i].op) == 0) return (x->out[0] = reduce_ops[i].fn(a, ax, n, keep)), true;
  if (strcmp(c->op, "var") == 0) x->out[0] = tg_var(a, ax, n, keep, param_or(c, "correction", 1));
  else if (strcmp(c->op, "std") == 0) x->out[0] = tg_std(a, ax, n, keep, param_or(c, "correction", 1));
  else if (strcmp(c->op, "argmax") == 0 || strcmp(c->op, "argmin") == 0) {
    bool is_max = strcmp(c->op, "argmax") == 0;
    if (all && keep) snprintf(x->missing, sizeof x->missing, "%s over all axes with keepdim", c->op);
    else if (all) x->out[0] = is_max ? tg_argmax_all(a) : tg_argmin(tg_flatten(a, 0, -1), 0, false);
    else x->out[0] = is_max ? tg_argmax(a, axes[0], keep) : tg_argmin(a, axes[0], keep);
  } else if (strcmp(c->op, "logsumexp") == 0) {
    /* the API takes one axis; all axes = the flattened tensor's axis 0 */
    if (all && keep) snprintf(x->missing, sizeof x->missing, "logsumexp over all axes with keepdim");
    else if (all) x->out[0] = tg_logsumexp(tg_flatten(a, 0, -1), 0, false);
    else x->out[0] = tg_logsumexp(a, axes[0], keep);
  } else if (strcmp(c->op, "cumsum") == 0) x->out[0] = tg_cumsum(a, (int)iparam_or(c, "axis", 0));
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
      if (part < 2) {
        if (*p != ':') return false;
        p++;
      }
    }
    idx[(*n)++] = s;
    if (*p == ',') p++;
    else if (*p) return false;
  }
  return *p == 0;
}

static bool run_movement(op_ctx *x) {
  const tf_case *c = x->c;
  tg_tensor *a = x->in[0];
  int64_t v[2 * TF_MAX_DIMS];
  int iv[TF_MAX_DIMS];
  size_t n = 0;
  char buf[256];
  if (strcmp(c->op, "reshape") == 0 || strcmp(c->op, "expand") == 0) {
    if (!tf_param_ints(c, "shape", v, TF_MAX_DIMS, &n)) n = 0; /* "shape=" (0-d) has no ints */
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
    tg_pad_mode mode = TG_PAD_CONSTANT;
    if (tf_param_str(c, "mode", buf, sizeof buf))
      mode = strcmp(buf, "reflect") == 0     ? TG_PAD_REFLECT
             : strcmp(buf, "replicate") == 0 ? TG_PAD_REPLICATE
             : strcmp(buf, "circular") == 0  ? TG_PAD_CIRCULAR
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
  } else if (strcmp(c->op, "lerp") == 0) {
    x->out[0] = tg_lerp(a, x->in[1], x->in[2]);
  } else if (strcmp(c->op, "masked_fill") == 0) {
    tg_tensor *value = tf_param_is_float(c, "value") ? tg_const_float(param_or(c, "value", 0))
                                                      : tg_const_int(iparam_or(c, "value", 0));
    x->out[0] = tg_masked_fill(a, x->in[1], value);
  } else if (strcmp(c->op, "index") == 0) {
    tg_index idx = TG_IT(x->in[1]);
    x->out[0] = tg_getitem(a, &idx, 1);
  } else if (strcmp(c->op, "cat") == 0 || strcmp(c->op, "stack") == 0) {
    int dim = (int)iparam_or(c, "dim", 0);
    const tg_tensor *ts[TF_MAX_TENSORS];
    for (int i = 0; i < c->ninputs; i++) ts[i] = x->in[i];
    x->out[0] = c->op[0] == 'c' ? tg_cat(ts, (size_t)c->ninputs, dim) : tg_stack(ts, (size_t)c->ninputs, dim);
  } else if (strcmp(c->op, "split") == 0 || strcmp(c->op, "chunk") == 0) {
    int dim = (int)iparam_or(c, "dim", 0);
    int got;
    if (c->op[0] == 's') {
      if (!tf_param_ints(c, "sizes", v, TF_MAX_DIMS, &n)) return false;
      got = n == 1 ? tg_split(a, v[0], dim, x->out, TF_MAX_TENSORS)
                   : tg_split_sizes(a, v, n, dim, x->out, TF_MAX_TENSORS);
    } else {
      got = tg_chunk(a, (int)iparam_or(c, "chunks", 1), dim, x->out, TF_MAX_TENSORS);
    }
    x->nout = got < 0 ? 0 : got;
    if (got < 0) x->out[0] = NULL;
    return true;
  } else if (strcmp(c->op, "one_hot") == 0) {
    x->out[0] = tg_one_hot(a, iparam_or(c, "num_classes", -1));
  } else if (strcmp(c->op, "gather") == 0) {
    x->out[0] = tg_gather(a, (int)iparam_or(c, "dim", 0), x->in[1]);
  } else if (strcmp(c->op, "assign") == 0) {
    /* the target is a realized buffer; assign into it (or into its shrink view), realize, read the whole target */
    tg_tensor *target = tg_contiguous(a), *value = x->in[1], *dst = target;
    if (x->realize && tg_realize(target) != TG_OK) return true; /* out[0] stays NULL: the error is reported */
    if (tf_param_str(c, "value", buf, sizeof buf) && strcmp(buf, "flip0_add") == 0)
      value = tg_add(tg_flip(target, TG_AXES(0)), value);
    if (tf_param_ints(c, "shrink", v, 2 * TF_MAX_DIMS, &n)) dst = tg_shrink(target, v, n / 2);
    if (tg_assign(dst, value) != TG_OK || (x->realize && tg_realize(dst) != TG_OK)) return true;
    x->out[0] = target;
  } else return false;
  return true;
}

static bool run_nn(op_ctx *x) {
  const tf_case *c = x->c;
  tg_tensor *a = x->in[0];
  int64_t stride[2] = {1, 1}, padding[2] = {0, 0}, dilation[2] = {1, 1}, kernel[2] = {2, 2};
  param_pair(c, "padding", padding);
  param_pair(c, "dilation", dilation);
  if (strcmp(c->op, "conv2d") == 0) {
    param_pair(c, "stride", stride);
    x->out[0] = tg_conv2d(a, x->in[1], c->ninputs > 2 ? x->in[2] : NULL, (int)iparam_or(c, "groups", 1), stride,
                          padding, dilation);
  } else if (strcmp(c->op, "max_pool2d") == 0 || strcmp(c->op, "avg_pool2d") == 0) {
    param_pair(c, "kernel_size", kernel);
    bool has_stride = param_pair(c, "stride", stride);
    if (c->op[0] == 'm') x->out[0] = tg_max_pool2d(a, kernel, has_stride ? stride : NULL, padding, dilation);
    else x->out[0] = tg_avg_pool2d(a, kernel, has_stride ? stride : NULL, padding, true);
  } else return false;
  return true;
}

static bool is_int_dtype(tg_dtype d) { return d != TG_BOOL && d >= TG_INT8 && d <= TG_UINT64; }

static bool run_creation(op_ctx *x) {
  const tf_case *c = x->c;
  int64_t shape[TF_MAX_DIMS];
  size_t n = 0;
  tg_dtype d = TG_FLOAT32;
  param_dtype(c, "dtype", &d);
  tf_param_ints(c, "shape", shape, TF_MAX_DIMS, &n);
  if (strcmp(c->op, "zeros") == 0) x->out[0] = tg_zeros(shape, n, d);
  else if (strcmp(c->op, "ones") == 0) x->out[0] = tg_ones(shape, n, d);
  else if (strcmp(c->op, "full") == 0)
    x->out[0] = is_int_dtype(d) ? tg_full_int(shape, n, iparam_or(c, "value", 0), d)
                                : tg_full(shape, n, param_or(c, "value", 0), d);
  else if (strcmp(c->op, "full_like") == 0) x->out[0] = tg_full_like(x->in[0], param_or(c, "value", 0), TG_VOID);
  else if (strcmp(c->op, "zeros_like") == 0) x->out[0] = tg_zeros_like(x->in[0], TG_VOID);
  else if (strcmp(c->op, "ones_like") == 0) x->out[0] = tg_ones_like(x->in[0], TG_VOID);
  else if (strcmp(c->op, "arange") == 0)
    x->out[0] = tg_arange(param_or(c, "start", 0), param_or(c, "stop", 0), param_or(c, "step", 1), d);
  else if (strcmp(c->op, "linspace") == 0)
    x->out[0] = tg_linspace(param_or(c, "start", 0), param_or(c, "stop", 0), iparam_or(c, "steps", 1), d);
  else if (strcmp(c->op, "eye") == 0) x->out[0] = tg_eye(iparam_or(c, "n", 1), iparam_or(c, "m", -1), d);
  else return false;
  return true;
}

/* Builds the case's outputs. Returns false when the op is unknown to this harness (a fixture/harness mismatch). */
static bool dispatch(op_ctx *x) {
  x->nout = 1;
  return run_unary_like(x) || run_reduce(x) || run_movement(x) || run_nn(x) || run_creation(x);
}

/* ------------------------------------------------------------------------------------------------ comparison */
static bool values_match(const tf_case *c, const tf_tensor *want, const uint8_t *got, char *why, size_t whylen) {
  size_t item = tf_itemsize(want->dtype);
  for (int64_t i = 0; i < want->numel; i++) {
    if (!tf_is_float(want->dtype)) {
      bool same = want->dtype == TF_BOOL ? (got[i] != 0) == (want->data[i] != 0)
                                         : memcmp(got + (size_t)i * item, want->data + (size_t)i * item, item) == 0;
      if (!same) {
        snprintf(why, whylen, "element %" PRId64 ": got %.17g, expected %.17g", i, tf_get_double(want->dtype, got, i),
                 tf_get_double(want->dtype, want->data, i));
        return false;
      }
      continue;
    }
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

static void shape_str(const int64_t *shape, int ndim, char *out, size_t outlen) {
  size_t len = (size_t)snprintf(out, outlen, "(");
  for (int i = 0; i < ndim && len < outlen; i++) len += (size_t)snprintf(out + len, outlen - len, "%s%" PRId64, i ? ", " : "", shape[i]);
  if (len < outlen) snprintf(out + len, outlen - len, ")");
}

/* Runs one case; returns 1 passed, 0 failed (why says how), -1 skipped (the API lacks the op: why says what).
 * Without realize only the lazy graph's shapes and dtypes are compared. */
static int run_case(const tf_case *c, bool realize, char *why, size_t whylen) {
  op_ctx x;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.realize = realize;
  for (int i = 0; i < c->ninputs; i++) {
    const tf_tensor *t = &c->inputs[i];
    x.in[i] = apply_view(tg_from_data(t->data, tg_of[t->dtype], t->shape, (size_t)t->ndim), t->view);
    if (!x.in[i]) {
      snprintf(why, whylen, "input %d: %s", i, tg_last_error());
      return 0;
    }
  }
  if (!dispatch(&x)) {
    snprintf(why, whylen, "the harness has no dispatch for op %s", c->op);
    return 0;
  }
  if (x.missing[0]) {
    snprintf(why, whylen, "%s", x.missing);
    return -1;
  }
  if (x.nout != c->noutputs) {
    snprintf(why, whylen, "%d outputs, expected %d (%s)", x.nout, c->noutputs, x.nout ? "" : tg_last_error());
    return 0;
  }
  for (int o = 0; o < x.nout; o++) {
    const tf_tensor *want = &c->outputs[o];
    tg_tensor *got = x.out[o];
    if (!got) {
      snprintf(why, whylen, "error: %s", tg_last_error());
      return 0;
    }
    char gs[128], ws[128];
    shape_str(tg_shape(got), tg_ndim(got), gs, sizeof gs);
    shape_str(want->shape, want->ndim, ws, sizeof ws);
    if (strcmp(gs, ws) != 0) {
      snprintf(why, whylen, "output %d shape %s, expected %s", o, gs, ws);
      return 0;
    }
    /* a result still of a weak (Python scalar) dtype realizes in the default dtype, as in tinygrad */
    tg_dtype gd = tg_get_dtype(got);
    gd = gd == TG_WEAKFLOAT ? TG_FLOAT32 : gd == TG_WEAKINT ? TG_INT32 : gd;
    if (gd != tg_of[want->dtype]) {
      snprintf(why, whylen, "output %d dtype %s, expected %s", o, tg_dtype_name(tg_get_dtype(got)),
               tf_dtype_name(want->dtype));
      return 0;
    }
    if (!realize) continue;
    uint8_t *host = malloc(want->nbytes ? want->nbytes : 1);
    if (!host) return 0;
    tg_status st = tg_to_host(got, host, want->nbytes);
    bool ok = st == TG_OK;
    if (!ok) snprintf(why, whylen, "realize/copy out: %s", tg_last_error());
    else ok = values_match(c, want, host, why, whylen);
    free(host);
    if (!ok) return 0;
  }
  return 1;
}

/* ------------------------------------------------------------------------------------------------ kernel counts */
/* Inputs are realized first, as in the reference measurement (DEV=CPU, inputs pre-realized). */
static tg_tensor *realized(const int64_t *shape, size_t ndim) {
  int64_t numel = 1;
  for (size_t i = 0; i < ndim; i++) numel *= shape[i];
  float *data = malloc((size_t)numel * sizeof *data);
  if (!data) return NULL;
  for (int64_t i = 0; i < numel; i++) data[i] = (float)((i * 7919) % 101) / 50.0f - 1.0f;
  tg_tensor *t = tg_from_floats(data, shape, ndim);
  free(data);
  if (t && tg_realize(t) != TG_OK) return NULL;
  return t;
}
#define R(...) realized(TG_SHAPE(__VA_ARGS__))

static int kc_matmul(tg_tensor **out) { return (out[0] = tg_matmul(R(16, 32), R(32, 8))) != NULL; }
static int kc_matmul_relu(tg_tensor **out) { return (out[0] = tg_relu(tg_matmul(R(16, 32), R(32, 8)))) != NULL; }
static int kc_sum(tg_tensor **out) { return (out[0] = tg_sum(R(16, 32), NULL, 0, false)) != NULL; }
static int kc_sum1_add(tg_tensor **out) {
  return (out[0] = tg_add(tg_sum(R(16, 32), TG_AXES(1), false), tg_const_int(1))) != NULL;
}
static int kc_exp_sum(tg_tensor **out) { return (out[0] = tg_sum(tg_exp(R(16, 32)), NULL, 0, false)) != NULL; }
static int kc_chain(tg_tensor **out) {
  return (out[0] = tg_sqrt(tg_exp(tg_mul(tg_add(R(16, 32), tg_const_int(1)), tg_const_int(2))))) != NULL;
}
static int kc_cat(tg_tensor **out) {
  tg_tensor *x = R(16, 32);
  const tg_tensor *both[2] = {x, x};
  return (out[0] = tg_cat(both, 2, 0)) != NULL;
}
static int kc_cumsum(tg_tensor **out) { return (out[0] = tg_cumsum(R(16, 32), -1)) != NULL; }
static const int64_t one2[2] = {1, 1}, zero2[2] = {0, 0}, two2[2] = {2, 2};
static int kc_conv(tg_tensor **out) {
  return (out[0] = tg_conv2d(R(1, 3, 8, 8), R(4, 3, 3, 3), NULL, 1, one2, zero2, one2)) != NULL;
}
static int kc_conv_relu(tg_tensor **out) {
  return (out[0] = tg_relu(tg_conv2d(R(1, 3, 8, 8), R(4, 3, 3, 3), NULL, 1, one2, zero2, one2))) != NULL;
}
static int kc_maxpool(tg_tensor **out) { return (out[0] = tg_max_pool2d(R(1, 3, 8, 8), two2, NULL, zero2, one2)) != NULL; }
static int kc_gather(tg_tensor **out) {
  const int32_t idx_data[3] = {1, 3, 5};
  tg_tensor *idx = tg_from_data(idx_data, TG_INT32, TG_SHAPE(3));
  if (!idx || tg_realize(idx) != TG_OK) return 0;
  tg_index it = TG_IT(idx);
  return (out[0] = tg_getitem(R(10, 4), &it, 1)) != NULL;
}
static int kc_softmax(tg_tensor **out) { return (out[0] = tg_softmax(R(16, 32), -1)) != NULL; }
static int kc_log_softmax(tg_tensor **out) { return (out[0] = tg_log_softmax(R(16, 32), -1)) != NULL; }
static int kc_center(tg_tensor **out) {
  tg_tensor *x = R(16, 32);
  return (out[0] = tg_sub(x, tg_mean(x, TG_AXES(1), true))) != NULL;
}
static int kc_layernorm(tg_tensor **out) { return (out[0] = tg_layernorm(R(16, 32), NULL, 0, 1e-5)) != NULL; }
static int kc_argmax(tg_tensor **out) { return (out[0] = tg_argmax(R(16, 32), -1, false)) != NULL; }
static int kc_two_outputs(tg_tensor **out) {
  tg_tensor *x = R(16, 32);
  out[0] = tg_add(x, tg_const_int(1));
  out[1] = tg_mul(x, tg_const_int(2));
  return out[0] && out[1] ? 2 : 0;
}
/* tinygrad's 2 / 3 are the steady state: its first random tensor of a process also copies the seed and counter to
 * the device (4 / 5 entries, 2 of them COPYs) */
static int kc_rand(tg_tensor **out) { return (out[0] = tg_rand(TG_SHAPE(10), TG_VOID)) != NULL; }
static int kc_randn(tg_tensor **out) { return (out[0] = tg_randn(TG_SHAPE(10), TG_VOID)) != NULL; }
static int kc_arange(tg_tensor **out) { return (out[0] = tg_arange(0, 10, 1, TG_VOID)) != NULL; }

/* tinygrad's counts at the reference commit, re-measured with Tensor.schedule_linear on these shapes */
static const kc_case kc_cases[] = {
    {"a@b", 1, kc_matmul, 0},
    {"(a@b).relu()", 1, kc_matmul_relu, 0},
    {"x.sum()", 1, kc_sum, 0},
    {"x.sum(1)+1", 1, kc_sum1_add, 0},
    {"x.exp().sum()", 1, kc_exp_sum, 0},
    {"((x+1)*2).exp().sqrt()", 1, kc_chain, 0},
    {"x.cat(x)", 1, kc_cat, 0},
    {"x.cumsum(-1)", 1, kc_cumsum, 0},
    {"x.conv2d(w)", 1, kc_conv, 0},
    {"x.conv2d(w).relu()", 1, kc_conv_relu, 0},
    {"x.max_pool2d()", 1, kc_maxpool, 0},
    {"x[idx_tensor]", 1, kc_gather, 0},
    /* the row rule keeps a row reduce consumed through a broadcast in its consumer's kernel: 1 kernel each */
    {"x.softmax(-1)", 3, kc_softmax, 1},
    {"x.log_softmax(-1)", 3, kc_log_softmax, 1},
    {"x - x.mean(1, keepdim=True)", 2, kc_center, 1},
    {"x.argmax(-1)", 2, kc_argmax, 1},
    {"x.layernorm()", 3, kc_layernorm, 1},
    {"Tensor.realize(x+1, x*2)", 2, kc_two_outputs, 0},
    {"Tensor.rand(10)", 2, kc_rand, 0},
    {"Tensor.randn(10)", 3, kc_randn, 0},
    {"Tensor.arange(10)", 0, kc_arange, 0},
};

const kc_case *kernel_count_cases(size_t *n) {
  *n = sizeof kc_cases / sizeof kc_cases[0];
  return kc_cases;
}

/* ------------------------------------------------------------------------------------------------ the suite */
/* Quick mode (TG_TEST_QUICK=1, make test-fast): the first case of each op in each file, so every op is still realized
 * and compared once; the full tier runs every case. */
static bool first_of_op(const tf_file *f, size_t i) {
  for (size_t j = 0; j < i; j++)
    if (strcmp(f->cases[j].op, f->cases[i].op) == 0) return false;
  return true;
}

/* every fixture case through run_case; prints one summary line */
static void run_all_cases(const char *suite, bool realize) {
  const char *dir = tf_dir(), *only = getenv("TG_OPS_ONLY"); /* debugging: only cases whose name contains this */
  size_t passed = 0, failed = 0, skipped = 0, left_out = 0, live_before = tg_live_tensors();
  char skip_ops[1024] = "";
  for (size_t g = 0; g < tf_ngroups; g++) {
    char path[1200], err[256];
    tf_file f;
    snprintf(path, sizeof path, "%s/%s.tgf", dir, tf_groups[g]);
    bool ok = tf_load(path, &f, err, sizeof err);
    CHECK_MSG(ok, "%s: %s", path, err);
    for (size_t i = 0; ok && i < f.ncases; i++) {
      const tf_case *c = &f.cases[i];
      if (only && *only && !strstr(c->name, only)) continue;
      if (tg_test_quick && realize && !first_of_op(&f, i)) {
        left_out++;
        continue;
      }
      char why[4096] = "";
      tg_scope s = tg_scope_begin();
      int r = run_case(c, realize, why, sizeof why);
      tg_scope_end(s);
      if (r < 0) {
        skipped++;
        if (!strstr(skip_ops, c->op) && strlen(skip_ops) + strlen(c->op) + 2 < sizeof skip_ops) {
          strcat(skip_ops, " ");
          strcat(skip_ops, c->op);
        }
        continue;
      }
      /* one line per failing case, however many (the CHECK macros print only the first 50) */
      if (r) {
        passed++;
        tg_test_passed++;
      } else {
        failed++;
        tg_test_failed++;
        char *nl = strchr(why, '\n'); /* compiler errors: their first line, unless TG_OPS_VERBOSE is set */
        if (nl && !getenv("TG_OPS_VERBOSE")) *nl = 0;
        fprintf(stderr, "  FAIL %s %s/%s [%s %s]: %s\n", suite, tf_groups[g], c->name, c->op, c->params, why);
      }
    }
    tf_free(&f);
  }
  CHECK_EQ_INT(tg_live_tensors(), live_before);
  char quick[64] = "";
  if (left_out) snprintf(quick, sizeof quick, " (quick: %zu cases left out)", left_out);
  if (skipped)
    printf("%s: %zu cases passed, %zu failed, %zu skipped (not in the API:%s)%s\n", suite, passed, failed, skipped,
           skip_ops, quick);
  else
    printf("%s: %zu cases passed, %zu failed%s\n", suite, passed, failed, quick);
}

/* Shapes and dtypes of every case's lazy result (tinygrad's shape inference and type promotion), without realizing. */
void suite_op_shapes(void);
void suite_op_shapes(void) { run_all_cases("op_shapes", false); }

/* Values: every case realized and compared. */
/* tinygrad's WINO=1: every conv2d fixture again with Winograd F(4x4, 3x3) where it applies (float, 3x3, stride and
 * dilation 1), against the same torch values and tolerances; the rest take the direct path as before */
static void check_winograd_cases(void) {
  char path[1200], err[256];
  tf_file f;
  snprintf(path, sizeof path, "%s/nn.tgf", tf_dir());
  bool ok = tf_load(path, &f, err, sizeof err);
  CHECK_MSG(ok, "%s: %s", path, err);
  test_setenv("WINO", "1");
  int winograd = 0;
  for (size_t i = 0; ok && i < f.ncases; i++) {
    const tf_case *c = &f.cases[i];
    if (strcmp(c->op, "conv2d") != 0) continue;
    int64_t st[2] = {1, 1}, dl[2] = {1, 1};
    size_t n;
    bool s1 = !tf_param_ints(c, "stride", st, 2, &n) || (st[0] == 1 && (n == 1 || st[1] == 1));
    bool d1 = !tf_param_ints(c, "dilation", dl, 2, &n) || (dl[0] == 1 && (n == 1 || dl[1] == 1));
    winograd += s1 && d1 && c->inputs[1].shape[2] == 3 && c->inputs[1].shape[3] == 3;
    char why[4096] = "";
    tg_scope s = tg_scope_begin();
    int r = run_case(c, true, why, sizeof why);
    tg_scope_end(s);
    CHECK_MSG(r == 1, "WINO=1 nn/%s [%s]: %s", c->name, c->params, why);
  }
  test_unsetenv("WINO");
  CHECK_MSG(winograd >= 5, "only %d conv2d fixtures take the Winograd path", winograd);
  tf_free(&f);
}

void suite_ops(void);
void suite_ops(void) {
  run_all_cases("ops", true);
  check_winograd_cases();
  /* the kernel-count builders must at least build (the counts are checked by the scheduler's suite) */
  size_t nkc;
  const kc_case *kc = kernel_count_cases(&nkc);
  for (size_t i = 0; i < nkc; i++) {
    tg_scope s = tg_scope_begin();
    tg_tensor *outs[4] = {NULL};
    int n = kc[i].build(outs);
    CHECK_MSG(n > 0, "kernel-count case %s: %s", kc[i].expr, tg_last_error());
    tg_scope_end(s);
  }
}
