/* mixin_reduce.c — reductions and the ops built on them, as tinygrad builds them: REDUCE(op, n) over the first n axes of
 * a PERMUTE that moves the reduced axes to the front (size-1 axes are never reduced, only reshaped away), sum in the
 * sum-accumulation dtype, mean/var via sum and a weak divisor, softmax/logsumexp with a detached max, argmax via an
 * arange mask, cumsum via a pad + pool + sum, matmul as broadcast multiply + sum, conv2d and pooling via _pool. */
#include "uop/mixin.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"

#include <math.h>
#include <stdio.h>

/* resolve and dedup axes (NULL = all); an error names the bad axis */
static bool resolve_axes(UOp *x, const int *axes, int naxes, bool *red, int *nd) {
  const SymShape *ss = mix_shape_peek(x);
  if (!ss) return false;
  int ndim = ss->max.ndim;
  *nd = ndim;
  memset(red, 0, sizeof(bool) * TG_MAX_DIMS);
  if (!axes) {
    for (int i = 0; i < ndim; i++) red[i] = true;
    return true;
  }
  for (int i = 0; i < naxes; i++) {
    int d;
    if (!mix_resolve_dim(x, axes[i], false, &d)) return false;
    if (ndim == 0) continue; /* tinygrad: a 0-d tensor reduces nothing */
    red[d] = true;
  }
  return true;
}

/* UOp._rop (a symbolic size is never 1: it is reduced) */
static UOp *rop(UOp *x, TgOp op, const bool *red) {
  SymShape keep;
  const SymShape *s = mix_shape_peek(x);
  if (!s) return NULL;
  int nd = s->max.ndim, perm[TG_MAX_DIMS], np = 0, nred = 0;
  memset(&keep, 0, sizeof keep);
  bool same = true;
  for (int i = 0; i < nd; i++) {
    bool one = !s->sym[i] && s->max.d[i] == 1;
    if (red[i] && !one) perm[np++] = i, nred++;
  }
  for (int i = 0; i < nd; i++) {
    bool one = !s->sym[i] && s->max.d[i] == 1;
    if (!(red[i] && !one)) perm[np++] = i;
    if (!red[i]) keep.max.d[keep.max.ndim] = s->max.d[i], keep.sym[keep.max.ndim++] = s->sym[i];
    if (red[i] && one) same = false;
  }
  if (nred == 0) return mix_reshape_sym(x, &keep);
  UOp *p = mix_permute(x, perm, nd);
  if (!p) return NULL;
  UOp *r = uop_new(TG_OP_REDUCE, NULL, &p, 1, arg_reduce(op, nred));
  return same ? r : mix_reshape_sym(r, &keep);
}

/* ReduceMixin._reduce */
UOp *mix_reduce(UOp *x, TgOp op, const int *axes, int naxes, bool keepdim) {
  if (!x) return NULL;
  x = mix_cast(x, dt_strong(x->dtype));
  bool red[TG_MAX_DIMS];
  int nd;
  if (!resolve_axes(x, axes, naxes, red, &nd)) return NULL;
  UOp *r = rop(x, op, red);
  if (!keepdim || !r) return r;
  SymShape s;
  mix_shape_sym(x, &s);
  for (int i = 0; i < s.max.ndim; i++)
    if (red[i]) s.max.d[i] = 1, s.sym[i] = NULL;
  return mix_reshape_sym(r, &s);
}

UOp *mix_sum(UOp *x, const int *axes, int naxes, bool keepdim, const DType *dtype) {
  if (!x) return NULL;
  UOp *r = mix_reduce(mix_cast(x, dtype ? dtype : dt_sum_acc(x->dtype)), TG_OP_ADD, axes, naxes, keepdim);
  bool small_float = x->dtype == DT_FLOAT16 || x->dtype == DT_BFLOAT16 || (dt_is_float(x->dtype) && x->dtype->bitsize == 8);
  return !dtype && small_float ? mix_cast(r, x->dtype) : r;
}

UOp *mix_prod(UOp *x, const int *axes, int naxes, bool keepdim) { return mix_reduce(x, TG_OP_MUL, axes, naxes, keepdim); }
UOp *mix_max(UOp *x, const int *axes, int naxes, bool keepdim) { return mix_reduce(x, TG_OP_MAX, axes, naxes, keepdim); }
UOp *mix_min(UOp *x, const int *axes, int naxes, bool keepdim) {
  return mix_inverse(mix_max(mix_inverse(x), axes, naxes, keepdim));
}

/* product of the sizes a reduction over `axes` removes (tinygrad's denominator): a weak int, symbolic or not */
static UOp *reduced_count(UOp *x, const int *axes, int naxes) {
  bool red[TG_MAX_DIMS];
  int nd;
  SymShape s;
  if (!resolve_axes(x, axes, naxes, red, &nd) || !mix_shape_sym(x, &s)) return NULL;
  return mix_sym_numel(&s, red);
}

UOp *mix_mean(UOp *x, const int *axes, int naxes, bool keepdim) {
  if (!x) return NULL;
  const DType *out = dt_is_float(x->dtype) ? x->dtype : DT_FLOAT32;
  UOp *n = reduced_count(x, axes, naxes);
  if (!n) return NULL;
  UOp *num = mix_sum(mix_cast(x, dt_sum_acc(x->dtype)), axes, naxes, keepdim, NULL);
  return mix_cast(mix_div(num, n, TG_ROUND_NONE), out);
}

UOp *mix_var(UOp *x, const int *axes, int naxes, bool keepdim, double correction) {
  if (!x) return NULL;
  const DType *out = dt_is_float(x->dtype) ? x->dtype : DT_FLOAT32;
  UOp *sq = mix_square(mix_sub(x, mix_mean(x, axes, naxes, true)));
  UOp *n = sq ? reduced_count(x, axes, naxes) : NULL;
  if (!n) return NULL;
  UOp *num = mix_sum(mix_cast(sq, dt_sum_acc(x->dtype)), axes, naxes, keepdim, NULL);
  UOp *den;
  if (n->op == TG_OP_CONST) {
    double d = (double)n->arg.c.i - correction;
    den = correction == floor(correction) ? mix_weak_int(d > 0 ? (int64_t)d : 0) : mix_weak_float(d > 0 ? d : 0);
  } else if (correction == floor(correction)) { /* tinygrad: max(0, n - correction) on the symbolic count */
    den = uop_simplify(uop_new(TG_OP_MAX, DT_WEAKINT, (UOp *[]){uop_add(n, uop_const_int(DT_WEAKINT, -(int64_t)correction)), uop_const_int(DT_WEAKINT, 0)}, 2, arg_none()));
  } else {
    return mix_err_unsupported("var with a fractional correction over a symbolic size");
  }
  return mix_cast(mix_div(num, den, TG_ROUND_NONE), out);
}

UOp *mix_softmax(UOp *x, int axis, bool log) {
  UOp *m = mix_sub(x, mix_detach(mix_max(x, &axis, 1, true)));
  UOp *e = mix_exp(m);
  UOp *ss = mix_sum(e, &axis, 1, true, NULL);
  return log ? mix_sub(m, mix_log(ss)) : mix_mul(e, mix_reciprocal(ss));
}

UOp *mix_logsumexp(UOp *x, int axis, bool keepdim) {
  UOp *m = mix_detach(mix_max(x, &axis, 1, true));
  UOp *r = mix_log(mix_sum(mix_exp(mix_sub(x, m)), &axis, 1, keepdim, NULL));
  return mix_add(r, keepdim ? m : mix_squeeze(m, axis));
}

UOp *mix_argmax(UOp *x, int axis, bool keepdim) {
  Shape s;
  int d;
  if (!x || !mix_shape(x, &s)) return NULL;
  if (!mix_resolve_dim(x, axis, false, &d)) return NULL;
  if (s.ndim == 0) return mix_err("argmax of a 0-d tensor needs no axis");
  UOp *m = mix_eq(x, mix_max(x, &d, 1, true));
  int64_t rs[TG_MAX_DIMS];
  int nr = 0;
  rs[nr++] = s.d[d];
  for (int i = d + 1; i < s.ndim; i++) rs[nr++] = 1;
  UOp *idx = mix_mul(m, mix_reshape(mix_arange((double)s.d[d], 0, -1, NULL), rs, nr));
  return mix_cast(mix_sub(mix_weak_int(s.d[d]), mix_max(idx, &d, 1, keepdim)), DT_INT32);
}

UOp *mix_cumalu(UOp *x, int axis, TgOp op) {
  Shape s;
  int d;
  if (!x || !mix_shape(x, &s) || !mix_resolve_dim(x, axis, false, &d)) return NULL;
  if (s.ndim == 0 || s.d[d] == 0) return mix_err("cumulative op over an empty axis");
  int64_t pads[2 * TG_MAX_DIMS] = {0};
  pads[2 * (s.ndim - 1)] = s.d[d] - 1;
  int64_t k = s.d[d], one = 1;
  UOp *pooled = mix_pool(mix_pad_constant(mix_transpose(x, d, -1), pads, s.ndim, uop_identity_element(op, x->dtype)), &k, 1, &one, &one);
  int last = -1;
  UOp *r = op == TG_OP_ADD ? mix_sum(pooled, &last, 1, false, NULL) : op == TG_OP_MAX ? mix_max(pooled, &last, 1, false)
                                                                                    : mix_prod(pooled, &last, 1, false);
  return mix_transpose(r, d, -1);
}

/* _split_cumalu: one pooled sum up to 512, two stages beyond */
UOp *mix_split_cumalu(UOp *x, int axis, TgOp op) {
  Shape s;
  int d;
  if (!x || !mix_shape(x, &s) || !mix_resolve_dim(x, axis, false, &d)) return NULL;
  if (s.ndim == 0 || shape_numel(&s) == 0) return op == TG_OP_ADD ? mix_cast(x, mix_sum(x, NULL, 0, false, NULL)->dtype) : x;
  const int64_t SPLIT = 256;
  int64_t n = s.d[d];
  if (n <= SPLIT * 2) return mix_cumalu(x, d, op);
  Const value = uop_identity_element(op, x->dtype);
  int64_t pads[2 * TG_MAX_DIMS] = {0};
  pads[2 * (s.ndim - 1)] = (n + SPLIT - 1) / SPLIT * SPLIT - n;
  UOp *t = mix_pad_constant(mix_transpose(x, d, -1), pads, s.ndim, value);
  Shape ts;
  if (!mix_shape(t, &ts) || ts.ndim + 1 > TG_MAX_DIMS) return t ? mix_err("too many dims") : NULL;
  int64_t us[TG_MAX_DIMS];
  for (int i = 0; i < ts.ndim - 1; i++) us[i] = ts.d[i];
  us[ts.ndim - 1] = -1, us[ts.ndim] = SPLIT;
  UOp *chunks = mix_cumalu(mix_reshape(t, us, ts.ndim + 1), -1, op);
  int cn = ts.ndim + 1;
  tg_index idx[2] = {{TG_IDX_ELLIPSIS, 0, 0, 1, false, false, NULL}, {TG_IDX_INT, -1, 0, 1, true, false, NULL}};
  UOp *last = mix_getitem(chunks, idx, NULL, 2);
  int64_t bp[2 * TG_MAX_DIMS] = {0};
  bp[2 * (cn - 2)] = 1, bp[2 * (cn - 2) + 1] = -1;
  UOp *base = mix_pad_constant(mix_cumalu(last, -1, op), bp, cn - 1, value);
  UOp *bu = mix_unsqueeze(base, -1);
  UOp *srcs[2] = {chunks, bu};
  UOp *comb = chunks && bu ? uop_new(op, NULL, srcs, 2, arg_none()) : NULL;
  UOp *flat = mix_flatten(comb, -2, -1);
  tg_index tail[2] = {{TG_IDX_ELLIPSIS, 0, 0, 1, false, false, NULL}, {TG_IDX_SLICE, -n, 0, 1, true, false, NULL}};
  return mix_transpose(mix_getitem(flat, tail, NULL, 2), d, -1);
}

UOp *mix_cumsum(UOp *x, int axis) { return mix_split_cumalu(x, axis, TG_OP_ADD); }

/* tinygrad's _tri(n, n, diagonal): arange(n)[:, None] + diagonal <= arange(n) (true on and above that diagonal) */
static UOp *tri_mask(int64_t n, int64_t diagonal) {
  int64_t col[2] = {n, 1};
  UOp *rows = mix_reshape(mix_arange(0, (double)n, 1, NULL), col, 2);
  return mix_le(mix_add(rows, mix_weak_int(diagonal)), mix_arange(0, (double)n, 1, NULL));
}

/* cummax (tinygrad's): the running maximum along d and, when idx is wanted, the int32 index where it was first
 * reached: match[i][j] = x[i] == values[j] for i <= j, the index the smallest such i. */
UOp *mix_cummax(UOp *x, int axis, UOp **idx) {
  Shape s;
  int d;
  if (!x || !mix_shape(x, &s) || !mix_resolve_dim(x, axis, false, &d)) return NULL;
  if (s.ndim == 0) {
    if (idx) *idx = mix_const_like(x, const_int(0), DT_INT32);
    return x;
  }
  UOp *values = mix_split_cumalu(x, d, TG_OP_MAX);
  if (!idx || !values) return values;
  int64_t n = s.d[d], col[2] = {n, 1};
  UOp *xt = mix_transpose(x, d, -1), *vt = mix_transpose(values, d, -1);
  UOp *match = mix_mul(mix_eq(mix_unsqueeze(xt, -1), mix_unsqueeze(vt, -2)), tri_mask(n, 0));
  int m2 = -2;
  UOp *last = mix_max(mix_mul(match, mix_reshape(mix_arange((double)n, 0, -1, NULL), col, 2)), &m2, 1, false);
  *idx = mix_transpose(mix_cast(mix_add(mix_neg(last), mix_weak_int(n)), DT_INT32), -1, d);
  return *idx ? values : NULL;
}

/* logcumsumexp (tinygrad's): log(sum_{j <= i} exp(x[j] - m[i])) + m[i] with m the running maximum (detached) */
UOp *mix_logcumsumexp(UOp *x, int axis) {
  Shape s;
  int d;
  if (!x || !mix_shape(x, &s) || !mix_resolve_dim(x, axis, false, &d)) return NULL;
  if (s.ndim == 0) return x;
  UOp *xt = mix_transpose(x, d, -1);
  UOp *cm = mix_detach(mix_cummax(xt, -1, NULL));
  UOp *lower = mix_logical_not(tri_mask(s.d[d], 1));  /* j <= i */
  UOp *shifted = mix_sub(mix_unsqueeze(xt, -2), mix_unsqueeze(cm, -1));
  UOp *masked = mix_where(lower, shifted, mix_weak_float(-INFINITY));
  int last = -1;
  UOp *r = mix_add(mix_log(mix_sum(mix_exp(masked), &last, 1, false, NULL)), cm);
  return mix_transpose(r, -1, d);
}

UOp *mix_dot(UOp *x, UOp *w) {
  SymShape xs, ws, a;
  if (!x || !w || !mix_shape_sym(x, &xs) || !mix_shape_sym(w, &ws)) return NULL;
  int dx = xs.max.ndim, dw = ws.max.ndim;
  if (!(dx > 0 && dw > 0)) return mix_err("both tensors need to be at least 1D, got %dD and %dD", dx, dw);
  int axis_w = -TG_MIN(dw, 2);
  if (!shape_sym_dim_eq(&xs, dx - 1, &ws, dw + axis_w)) {
    char b1[200], b2[200];
    return mix_err("cannot dot %s and %s", shape_sym_fmt(&xs, b1, sizeof b1), shape_sym_fmt(&ws, b2, sizeof b2));
  }
  int ones = TG_MIN(TG_MIN(dx - 1, dw - 1), 1);
#define PUSH(S, k) (a.max.d[a.max.ndim] = (S).max.d[k], a.sym[a.max.ndim++] = (S).sym[k])
#define PUSH1() (a.max.d[a.max.ndim] = 1, a.sym[a.max.ndim++] = NULL)
  memset(&a, 0, sizeof a);
  for (int i = 0; i < dx - 1; i++) PUSH(xs, i);
  for (int i = 0; i < ones; i++) PUSH1();
  PUSH(xs, dx - 1);
  x = mix_reshape_sym(x, &a);
  memset(&a, 0, sizeof a);
  for (int i = 0; i < dw - 2; i++) PUSH(ws, i);
  for (int i = 0; i < ones; i++) PUSH1();
  for (int i = dw + axis_w; i < dw; i++) PUSH(ws, i);
#undef PUSH
#undef PUSH1
  w = mix_transpose(mix_reshape_sym(w, &a), -1, axis_w);
  if (!x || !w) return NULL;
  int last = -1;
  return mix_cast(mix_sum(mix_mul(x, w), &last, 1, false, NULL), dt_least_upper(x->dtype, w->dtype));
}

UOp *mix_one_hot_along_dim(UOp *x, int64_t num_classes, int dim) {
  if (!x) return NULL;
  if (!dt_is_int(x->dtype)) return mix_err("one-hot expects an int index tensor, getting %s", x->dtype->name);
  int d, nd = mix_ndim(x);
  if (!mix_resolve_dim(x, dim, false, &d)) return NULL;
  int offset = nd - d - 1;
  int64_t rs[TG_MAX_DIMS];
  rs[0] = num_classes;
  for (int i = 0; i < offset; i++) rs[1 + i] = 1;
  return mix_eq(x, mix_reshape(mix_arange(0, (double)num_classes, 1, NULL), rs, 1 + offset));
}

UOp *mix_gather(UOp *x, int dim, UOp *index) {
  Shape xs, is;
  int d;
  if (!x || !index || !mix_shape(x, &xs) || !mix_shape(index, &is)) return NULL;
  if (!dt_is_int(index->dtype)) return mix_err("index dtype %s is not an int dtype", index->dtype->name);
  if (is.ndim != xs.ndim) return mix_err("self.ndim must equal index.ndim, self %s, index %s", mix_fmt_shape(&xs), mix_fmt_shape(&is));
  if (!mix_resolve_dim(x, dim, false, &d)) return NULL;
  int64_t to[TG_MAX_DIMS];
  for (int i = 0; i < xs.ndim; i++) {
    if (i != d && xs.d[i] < is.d[i]) return mix_err("requires self.shape[d] >= index.shape[d] for d != dim: self %s, index %s", mix_fmt_shape(&xs), mix_fmt_shape(&is));
    to[i] = i == d ? -1 : is.d[i];
  }
  UOp *v = mix_transpose(mix_unsqueeze(mix_shrink_to(x, to, xs.ndim), -1), -1, d);
  int last = -1;
  return mix_sum(mix_where(mix_one_hot_along_dim(mix_unsqueeze(index, -1), xs.d[d], -1), v, mix_weak_int(0)), &last, 1, false, x->dtype);
}

/* ---- conv and pooling ---- */

UOp *mix_conv2d(UOp *x, UOp *w, int groups, const int64_t stride[2], const int64_t dilation[2], const int64_t pad4[4]) {
  Shape xs, ws;
  if (!mix_shape(x, &xs) || !mix_shape(w, &ws)) return NULL;
  int64_t pads[8] = {0, 0, 0, 0, pad4[0], pad4[1], pad4[2], pad4[3]};
  UOp *padded = mix_pad_constant(x, pads, 4, const_float(0.0));
  /* (not in tinygrad) The padded input is made contiguous first when each of its elements is read at least 256 times
   * (output channels per group x KH x KW): the conv's loads then need no masks, which the C compiler turns into
   * per-lane gated scalar loads. One kernel more. Measured (2 cores, AVX-512): beautiful_mnist's conv2 input gradient
   * (a transposed conv, 32 x 5 x 5 reads, batch 512) 212 -> 83 ms + 34 ms for the copy, conv4's (64 x 3 x 3) 76 ->
   * 25 + 12 ms, the training step 1.04-1.06 -> 1.30-1.41 steps/s; a 64x32x28x28 3x3 pad-1 conv (64 x 3 x 3) 117 ->
   * 171 GFLOPS. Small convs (tinygrad's kernel-count test: 16 x 3 x 3 reads, no padding) keep one kernel.
   * The same holds for an unpadded input computed by elementwise ops (a relu fused into the conv would run once per
   * read: beautiful_mnist's conv2 forward 57.8 -> 35.4 ms per step, all kernels of the step 321 -> 314 ms); on an
   * input that is already a buffer, CONTIGUOUS adds no kernel.
   * The copy is a hint (CONTIG_HINT_UNMASKED, uop.h): the scheduler makes it only on a device whose renderer says
   * gated loads are expensive (the CPU's C), and drops it elsewhere: on CUDA a masked load is one predicated load, and
   * the copy was a kernel more for nothing (the 64x32x28x28 3x3 pad-1 conv on the H200: 11.5 us + a launch on 73). */
  bool big = groups > 0 && ws.d[0] / groups * ws.d[2] * ws.d[3] >= 256;
  if (big) padded = mix_contiguous_hint(padded, CONTIG_HINT_UNMASKED);
  /* (not in tinygrad) The weight of such a conv is read with its output channels innermost (a copy of the small weight,
   * one kernel more): the codegen then keeps 16 output channels in one vector accumulator and broadcasts each input
   * pixel (cg_expand's vector accumulators, the heuristic's window rows). Measured (2 cores, AVX-512): the
   * 64x32x28x28 3x3 pad-1 conv 160-166 GFLOPS (pixels along a row in the vector, 28 of 48 lanes used) -> 248-257.
   * A hint too (CONTIG_HINT_LAYOUT): made only where the renderer has such vector accumulators (the CPU); the CUDA
   * codegen upcasts output channels in registers whatever the weight's layout (6.5 us + a launch on the H200). */
  if (big && groups == 1 && ws.d[0] % 16 == 0) {
    int to_inner[4] = {1, 2, 3, 0}, back[4] = {3, 0, 1, 2};
    w = mix_permute(mix_contiguous_hint(mix_permute(w, to_inner, 4), CONTIG_HINT_LAYOUT), back, 4);
  }
  UOp *p = mix_pool(padded, ws.d + 2, 2, stride, dilation);
  Shape ps;
  if (!p || !mix_shape(p, &ps)) return NULL;
  int64_t bs = xs.d[0], cout = ws.d[0], cin = ws.d[1];
  int64_t rcout = cout / groups, oy = ps.d[2], ox = ps.d[3], H = ws.d[2], W = ws.d[3];
  int64_t r1[8] = {bs, groups, cin, 1, oy, ox, H, W}, e1[8] = {bs, groups, cin, rcout, oy, ox, H, W};
  int perm[8] = {0, 1, 3, 4, 5, 2, 6, 7};
  p = mix_permute(mix_expand(mix_reshape(p, r1, 8), e1, 8), perm, 8);
  int64_t wr[8] = {1, groups, rcout, 1, 1, cin, H, W};
  int axes[3] = {-1, -2, -3};
  int64_t out[4] = {bs, cout, oy, ox};
  UOp *y = mix_reshape(mix_sum(mix_mul(p, mix_reshape(w, wr, 8)), axes, 3, true, NULL), out, 4);
  /* (not in tinygrad) The output gradient reaches such a conv's weight gradient channel-inner: the output goes through
   * permute -> CONTIGUOUS_BACKWARD -> permute back (nothing in the forward pass), so the backward pass materializes the
   * gradient with output channels innermost (the kernel that computes it anyway, or one copy), and the weight
   * gradient, a sum over batch and pixels, keeps 16 output channels in one vector accumulator (cg_expand). Only with
   * 16+ input channels: conv1's (1 input channel) weight gradient is too small to pay for a 9.4M-element transpose.
   * Measured (2 cores, AVX-512, beautiful_mnist at batch 512): conv2's weight gradient 73 -> 55 ms per step, conv3's
   * and conv4's 13 + 21 -> 14 + 15 ms; all kernels of the step 314 -> 266 ms; train_cnn 2.82-3.03 -> 3.06-3.26
   * steps/s, runs interleaved. The gradient's copy is a CONTIG_HINT_LAYOUT hint (made on the CPU only, as above). */
  if (y && big && groups == 1 && cout % 16 == 0 && cin >= 16) {
    int to_inner[4] = {0, 2, 3, 1}, back[4] = {0, 3, 1, 2};
    UOp *yc = mix_permute(y, to_inner, 4);
    yc = uop_new(TG_OP_CONTIGUOUS_BACKWARD, yc->dtype, &yc, 1, arg_int(CONTIG_HINT_LAYOUT));
    y = mix_permute(yc, back, 4);
  }
  return y;
}

/* ---- Winograd F(4x4, 3x3) (tinygrad WINO=1: _conv2d_winograd; Lavin & Gray, arXiv 1509.09308) ----
 * Each 6x6 input tile d and 3x3 filter g go to the transformed domain (Bt d B, G g Gt), where the convolution is a
 * product per tile position summed over input channels, and back (At m A) to a 4x4 output tile: 36 multiplies per
 * 16 outputs per channel pair instead of 144. The transforms are the paper's (tinygrad's constants). */
static const double wino_G[6 * 3] = {1.0 / 4, 0, 0, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6,
                                     1.0 / 24, 1.0 / 12, 1.0 / 6, 1.0 / 24, -1.0 / 12, 1.0 / 6, 0, 0, 1};
static const double wino_Bt[6 * 6] = {4, 0, -5, 0, 1, 0, 0, -4, -4, 1, 1, 0, 0, 4, -4, -1, 1, 0,
                                      0, -2, -1, 2, 1, 0, 0, 2, -1, -2, 1, 0, 0, 4, 0, -5, 0, 1};
static const double wino_At[4 * 6] = {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1};

/* mat (rows x cols, row-major) applied along each of the first `dims` axes of x (each of size cols): the separable
 * transform. Column k of mat is a stacked constant vector of shape (rows, 1, ...) times x[k] (tinygrad
 * _apply_winograd_matrix), so the constants fold into the arithmetic once the axis is upcast. */
static UOp *wino_apply(UOp *x, const double *mat, int rows, int cols, int dims) {
  for (int dim = 0; dim < dims && x; dim++) {
    x = mix_transpose(x, 0, dim);
    Shape s;
    if (!x || !mix_shape(x, &s)) return NULL;
    int64_t vshape[TG_MAX_DIMS], bounds[2 * TG_MAX_DIMS];
    vshape[0] = rows;
    for (int i = 1; i < s.ndim; i++) vshape[i] = 1, bounds[2 * i] = 0, bounds[2 * i + 1] = s.d[i];
    UOp *acc = NULL;
    for (int k = 0; k < cols; k++) {
      UOp *c[6];
      for (int i = 0; i < rows; i++) c[i] = mix_const(const_float(mat[i * cols + k]), x->dtype);
      bounds[0] = k, bounds[1] = k + 1;
      UOp *xk = mix_reshape(mix_shrink(x, bounds, s.ndim), s.d + 1, s.ndim - 1);
      UOp *term = mix_mul(mix_reshape(mix_stack(c, rows, 0), vshape, s.ndim), xk);
      acc = acc ? mix_add(acc, term) : term;
    }
    x = mix_transpose(acc, 0, dim);
  }
  return x;
}

UOp *mix_conv2d_winograd(UOp *x, UOp *w, int groups, const int64_t pad4[4]) {
  Shape xs, ws;
  if (!mix_shape(x, &xs) || !mix_shape(w, &ws)) return NULL;
  if (xs.ndim != 4 || ws.ndim != 4 || ws.d[2] != 3 || ws.d[3] != 3 || groups < 1 || ws.d[0] % groups ||
      ws.d[1] * groups != xs.d[1])
    return mix_err("winograd conv2d needs a (B, groups*cin, H, W) input and a (cout, cin, 3, 3) weight, got %s and %s",
                   mix_fmt_shape(&xs), mix_fmt_shape(&ws));
  /* (not in tinygrad) 16-bit and smaller floats run the transforms in float32: their entries reach 8 and their sums
   * lose what half keeps (a 2x4x4 half conv was off by 2x the value's size), the result is cast back */
  const DType *out_dt = x->dtype;
  bool widen = dt_is_float(out_dt) && out_dt->bitsize < 32;
  if (widen) x = mix_cast(x, DT_FLOAT32), w = mix_cast(w, DT_FLOAT32);
  int64_t bs = xs.d[0], cout = ws.d[0], cin = ws.d[1], rcout = cout / groups;
  int64_t oy = xs.d[2] + pad4[0] + pad4[1] - 2, ox = xs.d[3] + pad4[2] + pad4[3] - 2;
  if (oy < 1 || ox < 1) return mix_err("kernel size cannot be greater than actual input size %s", mix_fmt_shape(&xs));
  /* padded so the output is whole 4x4 tiles, then 6x6 windows every 4: (bs, cin_, ty, tx, 6, 6) */
  int64_t pads[8] = {0, 0, 0, 0, pad4[0], pad4[1] + (4 - oy % 4) % 4, pad4[2], pad4[3] + (4 - ox % 4) % 4};
  static const int64_t win[2] = {6, 6}, step[2] = {4, 4}, ones[2] = {1, 1};
  UOp *d = mix_pool(mix_pad_constant(x, pads, 4, const_float(0.0)), win, 2, step, ones);
  Shape dsh;
  if (!d || !mix_shape(d, &dsh)) return NULL;
  int64_t ty = dsh.d[2], tx = dsh.d[3];
  /* the window axes first: (6, 6, bs, cin_, ty, tx); CONTIGUOUS_BACKWARD keeps the input transform's gradient out of
   * the overlapping windows' accumulation (tinygrad's comment) */
  int to_front[6] = {4, 5, 0, 1, 2, 3}, w_front[4] = {2, 3, 0, 1};
  UOp *ret;
  d = mix_contiguous_backward(mix_permute(d, to_front, 6));
  UOp *gf = mix_contiguous(wino_apply(mix_permute(w, w_front, 4), wino_G, 6, 3, 2)); /* (6, 6, cout, cin) */
  UOp *df = wino_apply(d, wino_Bt, 6, 6, 2);                                           /* (6, 6, bs, cin_, ty, tx) */
  if (tg_getenv_int("WINO_GEMM", 1)) {
    /* (not in tinygrad) the layouts of a batched matmul: the input transform stored (6, 6, cin_, bs, ty, tx) and the
     * channel sums computed in (6, 6, groups, rcout, bs, ty, tx) order, so each of the 36 positions is a
     * (rcout x cin) @ (cin x bs*ty*tx) product whose columns are contiguous in both the operand and the result
     * (tinygrad's order interleaves bs with the channels: neither axis merges) */
    int cin_first[6] = {0, 1, 3, 2, 4, 5};
    int64_t split[7] = {6, 6, groups, cin, bs, ty, tx};
    int to_last[7] = {0, 1, 2, 4, 5, 6, 3};
    int64_t dshape[8] = {6, 6, groups, 1, bs, ty, tx, cin}, gshape[8] = {6, 6, groups, rcout, 1, 1, 1, cin};
    df = mix_reshape(mix_permute(mix_reshape(mix_contiguous(mix_permute(df, cin_first, 6)), split, 7), to_last, 7),
                     dshape, 8);
    int last = -1;
    /* (6, 6, groups, rcout, bs, ty, tx) -> (4, 4, ...) -> (bs, groups, rcout, ty, 4, tx, 4) */
    UOp *m = wino_apply(mix_sum(mix_mul(mix_reshape(gf, gshape, 8), df), &last, 1, false, NULL), wino_At, 4, 6, 2);
    int interleave[7] = {4, 2, 3, 5, 0, 6, 1};
    ret = m ? mix_permute(m, interleave, 7) : NULL;
  } else {
    int64_t gshape[8] = {6, 6, 1, groups, rcout, cin, 1, 1}, dshape[8] = {6, 6, bs, groups, 1, cin, ty, tx};
    int cin_axis = -3;
    /* (6, 6, bs, groups, rcout, ty, tx) -> (4, 4, ...) -> (bs, groups, rcout, ty, 4, tx, 4) */
    UOp *m = wino_apply(mix_sum(mix_mul(mix_reshape(gf, gshape, 8), mix_reshape(mix_contiguous(df), dshape, 8)),
                                &cin_axis, 1, false, NULL), wino_At, 4, 6, 2);
    int interleave[7] = {2, 3, 4, 5, 0, 6, 1};
    ret = m ? mix_permute(m, interleave, 7) : NULL;
  }
  int64_t joined[4] = {bs, cout, ty * 4, tx * 4}, out[4] = {bs, cout, oy, ox};
  ret = mix_shrink_to(mix_reshape(ret, joined, 4), out, 4);
  return widen ? mix_cast(ret, out_dt) : ret;
}

UOp *mix_strip_custom_grad(UOp *root) {
  UOpVec topo = {0}, from = {0}, to = {0};
  uop_toposort(root, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++) {
    UOp *u = topo.data[i];
    if (u->op != TG_OP_CUSTOM_GRAD) continue;
    UOp *det = mix_detach(u->src[1]), *value = uop_substitute(u->src[0], &det, &u->src[1], 1);
    tg_vec_push(&from, u);
    tg_vec_push(&to, value);
  }
  UOp *ret = from.len ? uop_substitute(root, from.data, to.data, from.len) : root;
  tg_vec_free(&topo); tg_vec_free(&from); tg_vec_free(&to);
  return ret;
}

UOp *mix_conv2d_input_grad(UOp *g, UOp *w, int groups, int64_t py, int64_t px) {
  Shape ws;
  if (!mix_shape(w, &ws) || groups < 1 || ws.d[0] % groups) return NULL;
  static const int64_t ones[2] = {1, 1};
  /* (groups*rcout, cin, KH, KW) -> (groups*cin, rcout, KH, KW): the channel axes swapped within each group */
  int64_t rcout = ws.d[0] / groups, cin = ws.d[1], KH = ws.d[2], KW = ws.d[3];
  int64_t split[5] = {groups, rcout, cin, KH, KW}, joined[4] = {groups * cin, rcout, KH, KW};
  int swap[5] = {0, 2, 1, 3, 4}, flip_axes[2] = {2, 3};
  UOp *wt = mix_flip(mix_reshape(mix_permute(mix_reshape(w, split, 5), swap, 5), joined, 4), flip_axes, 2);
  int64_t pad4[4] = {KH - 1 - py, KH - 1 - py, KW - 1 - px, KW - 1 - px};
  return mix_conv2d(g, wt, groups, ones, ones, pad4);
}
