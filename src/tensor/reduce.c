/* reduce.c — reductions and the ops built on them, as tinygrad builds them: REDUCE(op, n) over the first n axes of
 * a PERMUTE that moves the reduced axes to the front (size-1 axes are never reduced, only reshaped away), sum in the
 * sum-accumulation dtype, mean/var via sum and a weak divisor, softmax/logsumexp with a detached max, argmax via an
 * arange mask, cumsum via a pad + pool + sum, matmul as broadcast multiply + sum, conv2d and pooling via _pool. */
#include "tensor/tensor.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"

#include <math.h>
#include <stdio.h>

/* resolve and dedup axes (NULL = all); an error names the bad axis */
static bool resolve_axes(UOp *x, const int *axes, int naxes, bool *red, int *nd) {
  SymShape ss;
  if (!tensor_shape_sym(x, &ss)) return false;
  Shape s = ss.max;
  *nd = s.ndim;
  memset(red, 0, sizeof(bool) * TG_MAX_DIMS);
  if (!axes) {
    for (int i = 0; i < s.ndim; i++) red[i] = true;
    return true;
  }
  for (int i = 0; i < naxes; i++) {
    int d;
    if (!tensor_resolve_dim(x, axes[i], false, &d)) return false;
    if (s.ndim == 0) continue; /* tinygrad: a 0-d tensor reduces nothing */
    red[d] = true;
  }
  return true;
}

/* UOp._rop (a symbolic size is never 1: it is reduced) */
static UOp *rop(UOp *x, TgOp op, const bool *red) {
  SymShape s, keep;
  if (!tensor_shape_sym(x, &s)) return NULL;
  int nd = s.max.ndim, perm[TG_MAX_DIMS], np = 0, nred = 0;
  memset(&keep, 0, sizeof keep);
  bool same = true;
  for (int i = 0; i < nd; i++) {
    bool one = !s.sym[i] && s.max.d[i] == 1;
    if (red[i] && !one) perm[np++] = i, nred++;
  }
  for (int i = 0; i < nd; i++) {
    bool one = !s.sym[i] && s.max.d[i] == 1;
    if (!(red[i] && !one)) perm[np++] = i;
    if (!red[i]) keep.max.d[keep.max.ndim] = s.max.d[i], keep.sym[keep.max.ndim++] = s.sym[i];
    if (red[i] && one) same = false;
  }
  if (nred == 0) return tensor_reshape_sym(x, &keep);
  UOp *p = tensor_permute(x, perm, nd);
  if (!p) return NULL;
  UOp *r = uop_new(TG_OP_REDUCE, NULL, &p, 1, arg_reduce(op, nred));
  return same ? r : tensor_reshape_sym(r, &keep);
}

/* ReduceMixin._reduce */
UOp *tensor_reduce(UOp *x, TgOp op, const int *axes, int naxes, bool keepdim) {
  if (!x) return NULL;
  x = tensor_cast(x, dt_strong(x->dtype));
  bool red[TG_MAX_DIMS];
  int nd;
  if (!resolve_axes(x, axes, naxes, red, &nd)) return NULL;
  UOp *r = rop(x, op, red);
  if (!keepdim || !r) return r;
  SymShape s;
  tensor_shape_sym(x, &s);
  for (int i = 0; i < s.max.ndim; i++)
    if (red[i]) s.max.d[i] = 1, s.sym[i] = NULL;
  return tensor_reshape_sym(r, &s);
}

UOp *tensor_sum(UOp *x, const int *axes, int naxes, bool keepdim, const DType *dtype) {
  if (!x) return NULL;
  UOp *r = tensor_reduce(tensor_cast(x, dtype ? dtype : dt_sum_acc(x->dtype)), TG_OP_ADD, axes, naxes, keepdim);
  bool small_float = x->dtype == DT_FLOAT16 || x->dtype == DT_BFLOAT16 || (dt_is_float(x->dtype) && x->dtype->bitsize == 8);
  return !dtype && small_float ? tensor_cast(r, x->dtype) : r;
}

UOp *tensor_prod(UOp *x, const int *axes, int naxes, bool keepdim) { return tensor_reduce(x, TG_OP_MUL, axes, naxes, keepdim); }
UOp *tensor_max(UOp *x, const int *axes, int naxes, bool keepdim) { return tensor_reduce(x, TG_OP_MAX, axes, naxes, keepdim); }
UOp *tensor_min(UOp *x, const int *axes, int naxes, bool keepdim) {
  return tensor_inverse(tensor_max(tensor_inverse(x), axes, naxes, keepdim));
}

/* product of the sizes a reduction over `axes` removes (tinygrad's denominator): a weak int, symbolic or not */
static UOp *reduced_count(UOp *x, const int *axes, int naxes) {
  bool red[TG_MAX_DIMS];
  int nd;
  SymShape s;
  if (!resolve_axes(x, axes, naxes, red, &nd) || !tensor_shape_sym(x, &s)) return NULL;
  return tensor_sym_numel(&s, red);
}

UOp *tensor_mean(UOp *x, const int *axes, int naxes, bool keepdim) {
  if (!x) return NULL;
  const DType *out = dt_is_float(x->dtype) ? x->dtype : DT_FLOAT32;
  UOp *n = reduced_count(x, axes, naxes);
  if (!n) return NULL;
  UOp *num = tensor_sum(tensor_cast(x, dt_sum_acc(x->dtype)), axes, naxes, keepdim, NULL);
  return tensor_cast(tensor_div(num, n, TG_ROUND_NONE), out);
}

UOp *tensor_var(UOp *x, const int *axes, int naxes, bool keepdim, double correction) {
  if (!x) return NULL;
  const DType *out = dt_is_float(x->dtype) ? x->dtype : DT_FLOAT32;
  UOp *sq = tensor_square(tensor_sub(x, tensor_mean(x, axes, naxes, true)));
  UOp *n = sq ? reduced_count(x, axes, naxes) : NULL;
  if (!n) return NULL;
  UOp *num = tensor_sum(tensor_cast(sq, dt_sum_acc(x->dtype)), axes, naxes, keepdim, NULL);
  UOp *den;
  if (n->op == TG_OP_CONST) {
    double d = (double)n->arg.c.i - correction;
    den = correction == floor(correction) ? tensor_weak_int(d > 0 ? (int64_t)d : 0) : tensor_weak_float(d > 0 ? d : 0);
  } else if (correction == floor(correction)) { /* tinygrad: max(0, n - correction) on the symbolic count */
    den = uop_simplify(uop_new(TG_OP_MAX, DT_WEAKINT, (UOp *[]){uop_add(n, uop_const_int(DT_WEAKINT, -(int64_t)correction)), uop_const_int(DT_WEAKINT, 0)}, 2, arg_none()));
  } else {
    return tensor_err_unsupported("var with a fractional correction over a symbolic size");
  }
  return tensor_cast(tensor_div(num, den, TG_ROUND_NONE), out);
}

UOp *tensor_softmax(UOp *x, int axis, bool log) {
  UOp *m = tensor_sub(x, tensor_detach(tensor_max(x, &axis, 1, true)));
  UOp *e = tensor_exp(m);
  UOp *ss = tensor_sum(e, &axis, 1, true, NULL);
  return log ? tensor_sub(m, tensor_log(ss)) : tensor_mul(e, tensor_reciprocal(ss));
}

UOp *tensor_logsumexp(UOp *x, int axis, bool keepdim) {
  UOp *m = tensor_detach(tensor_max(x, &axis, 1, true));
  UOp *r = tensor_log(tensor_sum(tensor_exp(tensor_sub(x, m)), &axis, 1, keepdim, NULL));
  return tensor_add(r, keepdim ? m : tensor_squeeze(m, axis));
}

UOp *tensor_argmax(UOp *x, int axis, bool keepdim) {
  Shape s;
  int d;
  if (!x || !tensor_shape(x, &s)) return NULL;
  if (!tensor_resolve_dim(x, axis, false, &d)) return NULL;
  if (s.ndim == 0) return tensor_err("argmax of a 0-d tensor needs no axis");
  UOp *m = tensor_eq(x, tensor_max(x, &d, 1, true));
  int64_t rs[TG_MAX_DIMS];
  int nr = 0;
  rs[nr++] = s.d[d];
  for (int i = d + 1; i < s.ndim; i++) rs[nr++] = 1;
  UOp *idx = tensor_mul(m, tensor_reshape(tensor_arange((double)s.d[d], 0, -1, NULL), rs, nr));
  return tensor_cast(tensor_sub(tensor_weak_int(s.d[d]), tensor_max(idx, &d, 1, keepdim)), DT_INT32);
}

UOp *tensor_cumalu(UOp *x, int axis, TgOp op) {
  Shape s;
  int d;
  if (!x || !tensor_shape(x, &s) || !tensor_resolve_dim(x, axis, false, &d)) return NULL;
  if (s.ndim == 0 || s.d[d] == 0) return tensor_err("cumulative op over an empty axis");
  int64_t pads[2 * TG_MAX_DIMS] = {0};
  pads[2 * (s.ndim - 1)] = s.d[d] - 1;
  int64_t k = s.d[d], one = 1;
  UOp *pooled = tensor_pool(tensor_pad_constant(tensor_transpose(x, d, -1), pads, s.ndim, uop_identity_element(op, x->dtype)), &k, 1, &one, &one);
  int last = -1;
  UOp *r = op == TG_OP_ADD ? tensor_sum(pooled, &last, 1, false, NULL) : op == TG_OP_MAX ? tensor_max(pooled, &last, 1, false)
                                                                                    : tensor_prod(pooled, &last, 1, false);
  return tensor_transpose(r, d, -1);
}

/* _split_cumalu: one pooled sum up to 512, two stages beyond */
static UOp *split_cumalu(UOp *x, int axis, TgOp op) {
  Shape s;
  int d;
  if (!x || !tensor_shape(x, &s) || !tensor_resolve_dim(x, axis, false, &d)) return NULL;
  if (s.ndim == 0 || shape_numel(&s) == 0) return op == TG_OP_ADD ? tensor_cast(x, tensor_sum(x, NULL, 0, false, NULL)->dtype) : x;
  const int64_t SPLIT = 256;
  int64_t n = s.d[d];
  if (n <= SPLIT * 2) return tensor_cumalu(x, d, op);
  Const value = uop_identity_element(op, x->dtype);
  int64_t pads[2 * TG_MAX_DIMS] = {0};
  pads[2 * (s.ndim - 1)] = (n + SPLIT - 1) / SPLIT * SPLIT - n;
  UOp *t = tensor_pad_constant(tensor_transpose(x, d, -1), pads, s.ndim, value);
  Shape ts;
  if (!tensor_shape(t, &ts) || ts.ndim + 1 > TG_MAX_DIMS) return t ? tensor_err("too many dims") : NULL;
  int64_t us[TG_MAX_DIMS];
  for (int i = 0; i < ts.ndim - 1; i++) us[i] = ts.d[i];
  us[ts.ndim - 1] = -1, us[ts.ndim] = SPLIT;
  UOp *chunks = tensor_cumalu(tensor_reshape(t, us, ts.ndim + 1), -1, op);
  int cn = ts.ndim + 1;
  tg_index idx[2] = {{TG_IDX_ELLIPSIS, 0, 0, 1, false, false, NULL}, {TG_IDX_INT, -1, 0, 1, true, false, NULL}};
  UOp *last = tensor_getitem(chunks, idx, 2);
  int64_t bp[2 * TG_MAX_DIMS] = {0};
  bp[2 * (cn - 2)] = 1, bp[2 * (cn - 2) + 1] = -1;
  UOp *base = tensor_pad_constant(tensor_cumalu(last, -1, op), bp, cn - 1, value);
  UOp *bu = tensor_unsqueeze(base, -1);
  UOp *srcs[2] = {chunks, bu};
  UOp *comb = chunks && bu ? uop_new(op, NULL, srcs, 2, arg_none()) : NULL;
  UOp *flat = tensor_flatten(comb, -2, -1);
  tg_index tail[2] = {{TG_IDX_ELLIPSIS, 0, 0, 1, false, false, NULL}, {TG_IDX_SLICE, -n, 0, 1, true, false, NULL}};
  return tensor_transpose(tensor_getitem(flat, tail, 2), d, -1);
}

UOp *tensor_cumsum(UOp *x, int axis) { return split_cumalu(x, axis, TG_OP_ADD); }

/* tinygrad's _tri(n, n, diagonal): arange(n)[:, None] + diagonal <= arange(n) (true on and above that diagonal) */
static UOp *tri_mask(int64_t n, int64_t diagonal) {
  int64_t col[2] = {n, 1};
  UOp *rows = tensor_reshape(tensor_arange(0, (double)n, 1, NULL), col, 2);
  return tensor_le(tensor_add(rows, tensor_weak_int(diagonal)), tensor_arange(0, (double)n, 1, NULL));
}

/* cummax (tinygrad's): the running maximum along d and, when idx is wanted, the int32 index where it was first
 * reached: match[i][j] = x[i] == values[j] for i <= j, the index the smallest such i. */
static UOp *cummax_values(UOp *x, int axis, UOp **idx) {
  Shape s;
  int d;
  if (!x || !tensor_shape(x, &s) || !tensor_resolve_dim(x, axis, false, &d)) return NULL;
  if (s.ndim == 0) {
    if (idx) *idx = tensor_const_like(x, const_int(0), DT_INT32);
    return x;
  }
  UOp *values = split_cumalu(x, d, TG_OP_MAX);
  if (!idx || !values) return values;
  int64_t n = s.d[d], col[2] = {n, 1};
  UOp *xt = tensor_transpose(x, d, -1), *vt = tensor_transpose(values, d, -1);
  UOp *match = tensor_mul(tensor_eq(tensor_unsqueeze(xt, -1), tensor_unsqueeze(vt, -2)), tri_mask(n, 0));
  int m2 = -2;
  UOp *last = tensor_max(tensor_mul(match, tensor_reshape(tensor_arange((double)n, 0, -1, NULL), col, 2)), &m2, 1, false);
  *idx = tensor_transpose(tensor_cast(tensor_add(tensor_neg(last), tensor_weak_int(n)), DT_INT32), -1, d);
  return *idx ? values : NULL;
}

/* logcumsumexp (tinygrad's): log(sum_{j <= i} exp(x[j] - m[i])) + m[i] with m the running maximum (detached) */
static UOp *logcumsumexp(UOp *x, int axis) {
  Shape s;
  int d;
  if (!x || !tensor_shape(x, &s) || !tensor_resolve_dim(x, axis, false, &d)) return NULL;
  if (s.ndim == 0) return x;
  UOp *xt = tensor_transpose(x, d, -1);
  UOp *cm = tensor_detach(cummax_values(xt, -1, NULL));
  UOp *lower = tensor_logical_not(tri_mask(s.d[d], 1));  /* j <= i */
  UOp *shifted = tensor_sub(tensor_unsqueeze(xt, -2), tensor_unsqueeze(cm, -1));
  UOp *masked = tensor_where(lower, shifted, tensor_weak_float(-INFINITY));
  int last = -1;
  UOp *r = tensor_add(tensor_log(tensor_sum(tensor_exp(masked), &last, 1, false, NULL)), cm);
  return tensor_transpose(r, -1, d);
}

UOp *tensor_dot(UOp *x, UOp *w) {
  SymShape xs, ws, a;
  if (!x || !w || !tensor_shape_sym(x, &xs) || !tensor_shape_sym(w, &ws)) return NULL;
  int dx = xs.max.ndim, dw = ws.max.ndim;
  if (!(dx > 0 && dw > 0)) return tensor_err("both tensors need to be at least 1D, got %dD and %dD", dx, dw);
  int axis_w = -TG_MIN(dw, 2);
  if (!shape_sym_dim_eq(&xs, dx - 1, &ws, dw + axis_w)) {
    char b1[200], b2[200];
    return tensor_err("cannot dot %s and %s", shape_sym_fmt(&xs, b1, sizeof b1), shape_sym_fmt(&ws, b2, sizeof b2));
  }
  int ones = TG_MIN(TG_MIN(dx - 1, dw - 1), 1);
#define PUSH(S, k) (a.max.d[a.max.ndim] = (S).max.d[k], a.sym[a.max.ndim++] = (S).sym[k])
#define PUSH1() (a.max.d[a.max.ndim] = 1, a.sym[a.max.ndim++] = NULL)
  memset(&a, 0, sizeof a);
  for (int i = 0; i < dx - 1; i++) PUSH(xs, i);
  for (int i = 0; i < ones; i++) PUSH1();
  PUSH(xs, dx - 1);
  x = tensor_reshape_sym(x, &a);
  memset(&a, 0, sizeof a);
  for (int i = 0; i < dw - 2; i++) PUSH(ws, i);
  for (int i = 0; i < ones; i++) PUSH1();
  for (int i = dw + axis_w; i < dw; i++) PUSH(ws, i);
#undef PUSH
#undef PUSH1
  w = tensor_transpose(tensor_reshape_sym(w, &a), -1, axis_w);
  if (!x || !w) return NULL;
  int last = -1;
  return tensor_cast(tensor_sum(tensor_mul(x, w), &last, 1, false, NULL), dt_least_upper(x->dtype, w->dtype));
}

UOp *tensor_one_hot_along_dim(UOp *x, int64_t num_classes, int dim) {
  if (!x) return NULL;
  if (!dt_is_int(x->dtype)) return tensor_err("one-hot expects an int index tensor, getting %s", x->dtype->name);
  int d, nd = tensor_ndim(x);
  if (!tensor_resolve_dim(x, dim, false, &d)) return NULL;
  int offset = nd - d - 1;
  int64_t rs[TG_MAX_DIMS];
  rs[0] = num_classes;
  for (int i = 0; i < offset; i++) rs[1 + i] = 1;
  return tensor_eq(x, tensor_reshape(tensor_arange(0, (double)num_classes, 1, NULL), rs, 1 + offset));
}

UOp *tensor_gather(UOp *x, int dim, UOp *index) {
  Shape xs, is;
  int d;
  if (!x || !index || !tensor_shape(x, &xs) || !tensor_shape(index, &is)) return NULL;
  if (!dt_is_int(index->dtype)) return tensor_err("index dtype %s is not an int dtype", index->dtype->name);
  if (is.ndim != xs.ndim) return tensor_err("self.ndim must equal index.ndim, self %s, index %s", tensor_fmt_shape(&xs), tensor_fmt_shape(&is));
  if (!tensor_resolve_dim(x, dim, false, &d)) return NULL;
  int64_t to[TG_MAX_DIMS];
  for (int i = 0; i < xs.ndim; i++) {
    if (i != d && xs.d[i] < is.d[i]) return tensor_err("requires self.shape[d] >= index.shape[d] for d != dim: self %s, index %s", tensor_fmt_shape(&xs), tensor_fmt_shape(&is));
    to[i] = i == d ? -1 : is.d[i];
  }
  UOp *v = tensor_transpose(tensor_unsqueeze(tensor_shrink_to(x, to, xs.ndim), -1), -1, d);
  int last = -1;
  return tensor_sum(tensor_where(tensor_one_hot_along_dim(tensor_unsqueeze(index, -1), xs.d[d], -1), v, tensor_weak_int(0)), &last, 1, false, x->dtype);
}

/* ------------------------------------------------------------------------------------------------ public API */

static const int *axes_or_null(const int *axes) { return axes; }

#define REDUCE_API(name, expr)                                                             \
  tg_tensor *name(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim) {       \
    tensor_ctx_begin(#name);                                                                     \
    UOp *x = tensor_in(t, 1);                                                                    \
    const int *ax = axes_or_null(axes);                                                    \
    int nax = (int)naxes;                                                                  \
    if (x && naxes > TG_MAX_DIMS * 4) return tensor_ctx_end(tensor_err("too many axes (%zu)", naxes)); \
    return tensor_ctx_end(x ? (expr) : NULL);                                                    \
  }

REDUCE_API(tg_sum, tensor_sum(x, ax, nax, keepdim, NULL))
REDUCE_API(tg_prod, tensor_prod(x, ax, nax, keepdim))
REDUCE_API(tg_max, tensor_max(x, ax, nax, keepdim))
REDUCE_API(tg_min, tensor_min(x, ax, nax, keepdim))
REDUCE_API(tg_mean, tensor_mean(x, ax, nax, keepdim))
REDUCE_API(tg_any, tensor_max(tensor_cast(x, DT_BOOL), ax, nax, keepdim))
REDUCE_API(tg_all, tensor_prod(tensor_cast(x, DT_BOOL), ax, nax, keepdim))

tg_tensor *tg_var(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim, double correction) {
  tensor_ctx_begin("tg_var");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? tensor_var(x, axes, (int)naxes, keepdim, correction) : NULL);
}

tg_tensor *tg_std(const tg_tensor *t, const int *axes, size_t naxes, bool keepdim, double correction) {
  tensor_ctx_begin("tg_std");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? tensor_sqrt(tensor_var(x, axes, (int)naxes, keepdim, correction)) : NULL);
}

static tg_tensor *axis_api(const char *op, const tg_tensor *t, int axis, bool keepdim, int kind) {
  tensor_ctx_begin(op);
  UOp *x = tensor_in(t, 1), *r = NULL;
  int d;
  if (x && tensor_resolve_dim(x, axis, false, &d)) {
    switch (kind) {
    case 0: r = tensor_logsumexp(x, d, keepdim); break;
    case 1: r = tensor_argmax(x, d, keepdim); break;
    case 2: r = tensor_argmax(tensor_inverse(x), d, keepdim); break;
    case 3: r = tensor_cumsum(x, d); break;
    case 4: r = tensor_softmax(x, d, false); break;
    default: r = tensor_softmax(x, d, true); break;
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
  tensor_ctx_begin("tg_cumprod");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? split_cumalu(x, axis, TG_OP_MUL) : NULL);
}

/* cummax/cummin: the values as the result, the indices (when asked for) as a second new handle */
static tg_tensor *cum_extreme(const char *op, const tg_tensor *t, int axis, tg_tensor **indices, bool min) {
  if (indices) *indices = NULL;
  tensor_ctx_begin(op);
  UOp *x = tensor_in(t, 1), *idx = NULL;
  UOp *v = x ? cummax_values(min ? tensor_inverse(x) : x, axis, indices ? &idx : NULL) : NULL;
  if (v && min) v = tensor_inverse(v);
  tensor_ctx_begin(op); /* nested: the values' handle is made while the context (and idx's nodes) stay open */
  tg_tensor *values = tensor_ctx_end(v);
  if (indices && values) *indices = tensor_ctx_end(idx);
  else tensor_ctx_end_void();
  return values;
}
tg_tensor *tg_cummax(const tg_tensor *t, int axis, tg_tensor **indices) { return cum_extreme("tg_cummax", t, axis, indices, false); }
tg_tensor *tg_cummin(const tg_tensor *t, int axis, tg_tensor **indices) { return cum_extreme("tg_cummin", t, axis, indices, true); }

tg_tensor *tg_logcumsumexp(const tg_tensor *t, int axis) {
  tensor_ctx_begin("tg_logcumsumexp");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? logcumsumexp(x, axis) : NULL);
}

tg_tensor *tg_argmax_all(const tg_tensor *t) {
  tensor_ctx_begin("tg_argmax_all");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? tensor_argmax(tensor_flatten(x, 0, -1), 0, false) : NULL);
}

tg_tensor *tg_matmul(const tg_tensor *a, const tg_tensor *b) {
  tensor_ctx_begin("tg_matmul");
  UOp *x = tensor_in(a, 1), *w = x ? tensor_in(b, 2) : NULL;
  return tensor_ctx_end(w ? tensor_dot(x, w) : NULL);
}

tg_tensor *tg_dot(const tg_tensor *a, const tg_tensor *b) {
  tensor_ctx_begin("tg_dot");
  UOp *x = tensor_in(a, 1), *w = x ? tensor_in(b, 2) : NULL;
  return tensor_ctx_end(w ? tensor_dot(x, w) : NULL);
}

tg_tensor *tg_gather(const tg_tensor *t, int axis, const tg_tensor *index) {
  tensor_ctx_begin("tg_gather");
  UOp *x = tensor_in(t, 1), *i = x ? tensor_in(index, 2) : NULL;
  return tensor_ctx_end(i ? tensor_gather(x, axis, i) : NULL);
}

tg_tensor *tg_one_hot(const tg_tensor *t, int64_t num_classes) {
  tensor_ctx_begin("tg_one_hot");
  UOp *x = tensor_in(t, 1), *r = NULL;
  if (x && !dt_is_int(x->dtype)) r = tensor_err("expect integer dtype, getting %s", x->dtype->name);
  else if (x && num_classes < 0) r = tensor_err("num_classes must be non-negative, got %lld", (long long)num_classes);
  else if (x) {
    tg_index idx[2] = {{TG_IDX_ELLIPSIS, 0, 0, 1, false, false, NULL}, {TG_IDX_NEWAXIS, 0, 0, 1, false, false, NULL}};
    r = tensor_where(tensor_one_hot_along_dim(tensor_getitem(x, idx, 2), num_classes, -1), tensor_weak_int(1), tensor_weak_int(0));
  }
  return tensor_ctx_end(r);
}

/* ---- conv and pooling ---- */

/* (pad_y, pad_x) per spatial axis -> grouped (before, after) pairs over all axes, leading axes unpadded */
static void spatial_pads(int ndim, const int64_t *padding, int64_t *pads) {
  memset(pads, 0, sizeof(int64_t) * 2 * (size_t)ndim);
  for (int j = 0; j < 2; j++) pads[2 * (ndim - 2 + j)] = pads[2 * (ndim - 2 + j) + 1] = padding ? padding[j] : 0;
}

UOp *tensor_conv2d(UOp *x, UOp *w, int groups, const int64_t stride[2], const int64_t dilation[2], const int64_t pad4[4]) {
  Shape xs, ws;
  if (!tensor_shape(x, &xs) || !tensor_shape(w, &ws)) return NULL;
  int64_t pads[8] = {0, 0, 0, 0, pad4[0], pad4[1], pad4[2], pad4[3]};
  UOp *padded = tensor_pad_constant(x, pads, 4, const_float(0.0));
  /* (not in tinygrad) The padded input is made contiguous first when each of its elements is read at least 256 times
   * (output channels per group x KH x KW): the conv's loads then need no masks, which the C compiler turns into
   * per-lane gated scalar loads. One kernel more. Measured (2 cores, AVX-512): beautiful_mnist's conv2 input gradient
   * (a transposed conv, 32 x 5 x 5 reads, batch 512) 212 -> 83 ms + 34 ms for the copy, conv4's (64 x 3 x 3) 76 ->
   * 25 + 12 ms, the training step 1.04-1.06 -> 1.30-1.41 steps/s; a 64x32x28x28 3x3 pad-1 conv (64 x 3 x 3) 117 ->
   * 171 GFLOPS. Small convs (tinygrad's kernel-count test: 16 x 3 x 3 reads, no padding) keep one kernel.
   * The same holds for an unpadded input computed by elementwise ops (a relu fused into the conv would run once per
   * read: beautiful_mnist's conv2 forward 57.8 -> 35.4 ms per step, all kernels of the step 321 -> 314 ms); on an
   * input that is already a buffer, CONTIGUOUS adds no kernel. */
  bool big = groups > 0 && ws.d[0] / groups * ws.d[2] * ws.d[3] >= 256;
  if (big) padded = tensor_contiguous(padded);
  /* (not in tinygrad) The weight of such a conv is read with its output channels innermost (a copy of the small weight,
   * one kernel more): the codegen then keeps 16 output channels in one vector accumulator and broadcasts each input
   * pixel (cg_expand's vector accumulators, the heuristic's window rows). Measured (2 cores, AVX-512): the
   * 64x32x28x28 3x3 pad-1 conv 160-166 GFLOPS (pixels along a row in the vector, 28 of 48 lanes used) -> 248-257. */
  if (big && groups == 1 && ws.d[0] % 16 == 0) {
    int to_inner[4] = {1, 2, 3, 0}, back[4] = {3, 0, 1, 2};
    w = tensor_permute(tensor_contiguous(tensor_permute(w, to_inner, 4)), back, 4);
  }
  UOp *p = tensor_pool(padded, ws.d + 2, 2, stride, dilation);
  Shape ps;
  if (!p || !tensor_shape(p, &ps)) return NULL;
  int64_t bs = xs.d[0], cout = ws.d[0], cin = ws.d[1];
  int64_t rcout = cout / groups, oy = ps.d[2], ox = ps.d[3], H = ws.d[2], W = ws.d[3];
  int64_t r1[8] = {bs, groups, cin, 1, oy, ox, H, W}, e1[8] = {bs, groups, cin, rcout, oy, ox, H, W};
  int perm[8] = {0, 1, 3, 4, 5, 2, 6, 7};
  p = tensor_permute(tensor_expand(tensor_reshape(p, r1, 8), e1, 8), perm, 8);
  int64_t wr[8] = {1, groups, rcout, 1, 1, cin, H, W};
  int axes[3] = {-1, -2, -3};
  int64_t out[4] = {bs, cout, oy, ox};
  UOp *y = tensor_reshape(tensor_sum(tensor_mul(p, tensor_reshape(w, wr, 8)), axes, 3, true, NULL), out, 4);
  /* (not in tinygrad) The output gradient reaches such a conv's weight gradient channel-inner: the output goes through
   * permute -> CONTIGUOUS_BACKWARD -> permute back (nothing in the forward pass), so the backward pass materializes the
   * gradient with output channels innermost (the kernel that computes it anyway, or one copy), and the weight
   * gradient, a sum over batch and pixels, keeps 16 output channels in one vector accumulator (cg_expand). Only with
   * 16+ input channels: conv1's (1 input channel) weight gradient is too small to pay for a 9.4M-element transpose.
   * Measured (2 cores, AVX-512, beautiful_mnist at batch 512): conv2's weight gradient 73 -> 55 ms per step, conv3's
   * and conv4's 13 + 21 -> 14 + 15 ms; all kernels of the step 314 -> 266 ms; train_cnn 2.82-3.03 -> 3.06-3.26
   * steps/s, runs interleaved. */
  if (y && big && groups == 1 && cout % 16 == 0 && cin >= 16) {
    int to_inner[4] = {0, 2, 3, 1}, back[4] = {0, 3, 1, 2};
    UOp *yc = tensor_permute(y, to_inner, 4);
    yc = uop_new(TG_OP_CONTIGUOUS_BACKWARD, yc->dtype, &yc, 1, arg_none());
    y = tensor_permute(yc, back, 4);
  }
  return y;
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

UOp *tensor_strip_custom_grad(UOp *root) {
  UOpVec topo = {0}, from = {0}, to = {0};
  uop_toposort(root, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_CUSTOM_GRAD) continue;
    UOp *det = tensor_detach(u->src[1]), *value = uop_substitute(u->src[0], &det, &u->src[1], 1);
    tg_vec_push(&from, u);
    tg_vec_push(&to, value);
  }
  UOp *ret = from.len ? uop_substitute(root, from.data, to.data, from.len) : root;
  tg_vec_free(&topo); tg_vec_free(&from); tg_vec_free(&to);
  return ret;
}

UOp *tensor_conv2d_input_grad(UOp *g, UOp *w, int groups, int64_t py, int64_t px) {
  Shape ws;
  if (!tensor_shape(w, &ws) || groups < 1 || ws.d[0] % groups) return NULL;
  static const int64_t ones[2] = {1, 1};
  /* (groups*rcout, cin, KH, KW) -> (groups*cin, rcout, KH, KW): the channel axes swapped within each group */
  int64_t rcout = ws.d[0] / groups, cin = ws.d[1], KH = ws.d[2], KW = ws.d[3];
  int64_t split[5] = {groups, rcout, cin, KH, KW}, joined[4] = {groups * cin, rcout, KH, KW};
  int swap[5] = {0, 2, 1, 3, 4}, flip_axes[2] = {2, 3};
  UOp *wt = tensor_flip(tensor_reshape(tensor_permute(tensor_reshape(w, split, 5), swap, 5), joined, 4), flip_axes, 2);
  int64_t pad4[4] = {KH - 1 - py, KH - 1 - py, KW - 1 - px, KW - 1 - px};
  return tensor_conv2d(g, wt, groups, ones, ones, pad4);
}

tg_tensor *tg_conv2d(const tg_tensor *xt, const tg_tensor *wt, const tg_tensor *bt, int groups, const int64_t stride[2],
                     const int64_t padding[2], const int64_t dilation[2]) {
  tensor_ctx_begin("tg_conv2d");
  UOp *x = tensor_in(xt, 1), *w = x ? tensor_in(wt, 2) : NULL, *b = NULL;
  if (w && bt) b = tensor_in(bt, 3);
  if (!w || (bt && !b)) return tensor_ctx_end(NULL);
  Shape xs = xt->shape, ws = wt->shape;
  static const int64_t ones[2] = {1, 1}, zeros[2] = {0, 0};
  const int64_t *st = stride ? stride : ones, *dl = dilation ? dilation : ones, *pd = padding ? padding : zeros;
  if (xs.ndim != 4 || ws.ndim != 4) return tensor_ctx_end(tensor_err("conv2d needs 4-d input and weight, got %s and %s", tensor_fmt_shape(&xs), tensor_fmt_shape(&ws)));
  if (groups < 1) return tensor_ctx_end(tensor_err("groups must be positive, got %d", groups));
  int64_t cin_ = xs.d[1], cout = ws.d[0], cin = ws.d[1];
  if (groups * cin != cin_ || cout % groups)
    return tensor_ctx_end(tensor_err("Input Tensor shape %s does not match the shape of the weights %s. (%lld vs. %lld)", tensor_fmt_shape(&xs),
                         tensor_fmt_shape(&ws), (long long)(groups * cin), (long long)cin_));
  if (pd[0] < 0 || pd[1] < 0) return tensor_ctx_end(tensor_err("negative padding"));
  int64_t pad4[4] = {pd[0], pd[0], pd[1], pd[1]};
  bool transposed_grad = st[0] == 1 && st[1] == 1 && dl[0] == 1 && dl[1] == 1 && pd[0] < ws.d[2] &&
                         pd[1] < ws.d[3] && dt_is_float(x->dtype);
  UOp *ret = tensor_conv2d(transposed_grad ? tensor_detach(x) : x, w, groups, st, dl, pad4);
  if (ret && transposed_grad) ret = conv2d_input_grad_mark(ret, x, w, groups, pd);
  if (ret && b) {
    int64_t br[4] = {1, -1, 1, 1};
    ret = tensor_add(ret, tensor_reshape(b, br, 4));
  }
  return tensor_ctx_end(ret);
}

static bool pool_args(const tg_tensor *xt, const int64_t *kernel, const int64_t *stride, const int64_t *padding) {
  if (!kernel) return tensor_err("kernel size is NULL"), false;
  if (xt->shape.ndim < 2) return tensor_err("pooling needs at least 2 dims, got %s", tensor_fmt_shape(&xt->shape)), false;
  for (int j = 0; j < 2; j++) {
    if (kernel[j] < 1 || (stride && stride[j] < 1)) return tensor_err("kernel and stride must be positive"), false;
    if (padding && padding[j] < 0) return tensor_err("negative padding"), false;
  }
  return true;
}

tg_tensor *tg_max_pool2d(const tg_tensor *xt, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                         const int64_t dilation[2]) {
  tensor_ctx_begin("tg_max_pool2d");
  UOp *x = tensor_in(xt, 1);
  if (!x || !pool_args(xt, kernel, stride, padding)) return tensor_ctx_end(NULL);
  static const int64_t ones[2] = {1, 1};
  int nd = xt->shape.ndim;
  int64_t pads[2 * TG_MAX_DIMS];
  spatial_pads(nd, padding, pads);
  const DType *dt = dt_strong(x->dtype);
  Const lo = uop_identity_element(TG_OP_MAX, dt); /* padding never wins the max */
  UOp *p = tensor_pool(tensor_pad_constant(x, pads, nd, lo), kernel, 2, stride ? stride : kernel, dilation ? dilation : ones);
  int axes[2] = {-2, -1};
  return tensor_ctx_end(tensor_max(p, axes, 2, false));
}

tg_tensor *tg_avg_pool2d(const tg_tensor *xt, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                         bool count_include_pad) {
  tensor_ctx_begin("tg_avg_pool2d");
  UOp *x = tensor_in(xt, 1);
  if (!x || !pool_args(xt, kernel, stride, padding)) return tensor_ctx_end(NULL);
  static const int64_t ones[2] = {1, 1};
  int nd = xt->shape.ndim;
  int64_t pads[2 * TG_MAX_DIMS];
  spatial_pads(nd, padding, pads);
  const int64_t *st = stride ? stride : kernel;
  int axes[2] = {-2, -1};
  UOp *p = tensor_pool(tensor_pad_constant(x, pads, nd, const_float(0.0)), kernel, 2, st, ones);
  if (count_include_pad) return tensor_ctx_end(tensor_mean(p, axes, 2, false));
  UOp *cnt = tensor_pool(tensor_pad_constant(tensor_const_like(x, const_int(1), NULL), pads, nd, const_float(0.0)), kernel, 2, st, ones);
  return tensor_ctx_end(tensor_div(tensor_sum(p, axes, 2, false, NULL), tensor_sum(cnt, axes, 2, false, NULL), TG_ROUND_NONE));
}
