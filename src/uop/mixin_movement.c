/* mixin_movement.c — movement ops as tinygrad builds them (MovementMixin, UOp._mop, OpMixin pad/cat/getitem):
 * RESHAPE/EXPAND/PAD/SHRINK carry their shapes as UOp sources, EXPAND only prepends axes (broadcasting squeezes the
 * stretched axes, expands on the left and permutes back), and a view op that changes nothing returns its input. */
#include "uop/mixin.h"

/* NULL in, false out: every builder starts with this, so a failed argument propagates without a second message. */
static bool get_shape(UOp *x, Shape *s) { return x && mix_shape(x, s); }

/* The raw movement node (tinygrad's UOp._mop): sizes become shape-argument sources (CONST / STACK), orders and flip
 * flags an int arg. No checks here: the shape rule (uop/shape.c) validates the node when its shape is first asked. */
UOp *mix_mop(UOp *x, TgOp op, const int64_t *a, const int64_t *b, int n) {
  if (!x) return NULL;
  UOp *src[3] = {x, NULL, NULL};
  switch (op) {
  case TG_OP_RESHAPE: case TG_OP_EXPAND:
    if (op == TG_OP_EXPAND && n == 0) return x;
    src[1] = shape_to_uop(a, n);
    return uop_new(op, NULL, src, 2, arg_none());
  case TG_OP_PAD: case TG_OP_SHRINK:
    if (n == 0) return x;
    src[1] = shape_to_uop(a, n);
    src[2] = shape_to_uop(b, n);
    return uop_new(op, NULL, src, 3, arg_none());
  case TG_OP_PERMUTE: case TG_OP_FLIP:
    return uop_new(op, NULL, src, 1, arg_ints(op == TG_OP_PERMUTE ? ARG_PERM : ARG_FLIP, a, (size_t)n));
  default: return mix_err("%s is not a movement op", uop_op_name(op));
  }
}

/* tinygrad reshape: one -1 is inferred from the element count (refused when the known sizes multiply to 0, where any
 * size would fit); a reshape to the same shape is the input itself, so views never stack up needlessly. */
UOp *mix_reshape(UOp *x, const int64_t *shape, int n) {
  Shape s;
  if (!get_shape(x, &s)) return NULL;
  if (n > TG_MAX_DIMS) return mix_err("reshape to %d dims, at most %d supported", n, TG_MAX_DIMS);
  int64_t ns[TG_MAX_DIMS], known = 1;
  int infer = -1;
  for (int i = 0; i < n; i++) {
    ns[i] = shape[i];
    if (shape[i] == -1) {
      if (infer >= 0) return mix_err("only one dimension can be inferred using -1, getting %s", mix_fmt_dims(shape, n));
      infer = i;
    } else if (shape[i] < 0) return mix_err("shape can't contain negative numbers %s", mix_fmt_dims(shape, n));
    else known *= shape[i];
  }
  if (infer >= 0) {
    if (known == 0) return mix_err("cannot infer -1 in %s for %s (zero elements)", mix_fmt_dims(shape, n), mix_fmt_shape(&s));
    ns[infer] = shape_numel(&s) / known;
  }
  Shape to = {n, {0}};
  memcpy(to.d, ns, (size_t)n * sizeof(int64_t));
  if (shape_numel(&to) != shape_numel(&s)) return mix_err("size mismatch, can't reshape (%s) -> (%s)", mix_fmt_shape(&s), mix_fmt_shape(&to));
  if (shape_eq(&to, &s)) return x;
  return mix_mop(x, TG_OP_RESHAPE, ns, NULL, n);
}

/* tinygrad permute: negative axes allowed, each axis exactly once; the identity order is no node. */
UOp *mix_permute(UOp *x, const int *order, int n) {
  int nd = x ? mix_ndim(x) : -1;
  if (nd < 0) return NULL;
  if (n != nd) return mix_err("order has %d axes, tensor has %d", n, nd);
  int64_t ord[TG_MAX_DIMS];
  bool seen[TG_MAX_DIMS] = {0}, ident = true;
  for (int i = 0; i < n; i++) {
    int d;
    if (!mix_resolve_dim(x, order[i], false, &d)) return NULL;
    if (seen[d]) return mix_err("order is not a valid permutation of %d axes", n);
    seen[d] = true;
    ord[i] = d;
    ident = ident && d == i;
  }
  return ident ? x : mix_mop(x, TG_OP_PERMUTE, ord, NULL, n);
}

UOp *mix_transpose(UOp *x, int d0, int d1) {
  int nd = mix_ndim(x), a, b;
  if (nd < 0 || !mix_resolve_dim(x, d0, false, &a) || !mix_resolve_dim(x, d1, false, &b)) return NULL;
  int order[TG_MAX_DIMS];
  for (int i = 0; i < nd; i++) order[i] = i;
  order[a] = b, order[b] = a;
  return mix_permute(x, order, nd);
}

UOp *mix_broadcast_to(UOp *x, const Shape *ns) {
  SymShape s = shape_sym_from(ns);
  return mix_broadcast_to_sym(x, &s);
}

/* tinygrad expand: right-aligned like broadcasting, -1 keeps a size; the work is broadcast_to's. */
UOp *mix_expand(UOp *x, const int64_t *shape, int n) {
  Shape s, ns;
  if (!get_shape(x, &s)) return NULL;
  if (n > TG_MAX_DIMS) return mix_err("expand to %d dims, at most %d supported", n, TG_MAX_DIMS);
  int nd = TG_MAX(n, s.ndim);
  ns.ndim = nd;
  for (int i = 0; i < nd; i++) {
    int is = i - (nd - s.ndim), in = i - (nd - n);
    int64_t from = is >= 0 ? s.d[is] : 1, to = in >= 0 ? shape[in] : 1;
    ns.d[i] = to == -1 ? from : to;
    if (ns.d[i] < 0) return mix_err("invalid size %lld in expand to %s", (long long)to, mix_fmt_dims(shape, n));
  }
  return mix_broadcast_to(x, &ns);
}

/* tinygrad flip: per-axis flags in the arg (one FLIP for all axes); no axes is no node. */
UOp *mix_flip(UOp *x, const int *axes, int n) {
  Shape s;
  if (!get_shape(x, &s)) return NULL;
  int64_t flags[TG_MAX_DIMS] = {0};
  bool any = false;
  for (int i = 0; i < n; i++) {
    int d;
    if (!mix_resolve_dim(x, axes[i], false, &d)) return NULL;
    if (flags[d]) return mix_err("dim can appear at most once, getting %d twice", d);
    flags[d] = 1;
    any = true;
  }
  return any ? mix_mop(x, TG_OP_FLIP, flags, NULL, s.ndim) : x;
}

/* Concrete pads and bounds go through the symbolic builders (mixin_symshape.c) with CONST sizes: one implementation
 * of the PAD/SHRINK arithmetic for both. */
UOp *mix_pad_raw(UOp *x, const int64_t *pads, int n) {
  if (!x) return NULL;
  if (n > TG_MAX_DIMS) return mix_err("%d dims, at most %d supported", n, TG_MAX_DIMS);
  UOp *p[2 * TG_MAX_DIMS];
  for (int i = 0; i < 2 * n; i++) p[i] = uop_const_int(DT_WEAKINT, pads[i]);
  return mix_pad_sym(x, p, n);
}

UOp *mix_shrink(UOp *x, const int64_t *bounds, int n) {
  if (!x) return NULL;
  if (n > TG_MAX_DIMS) return mix_err("%d dims, at most %d supported", n, TG_MAX_DIMS);
  UOp *b[2 * TG_MAX_DIMS];
  for (int i = 0; i < 2 * n; i++) b[i] = uop_const_int(DT_WEAKINT, bounds[i]);
  return mix_shrink_sym(x, b, n);
}

/* shrink/pad to a target shape from the start of each axis (-1 keeps the size): the forms _pool and cat use. */
UOp *mix_shrink_to(UOp *x, const int64_t *shape, int n) {
  Shape s;
  if (!get_shape(x, &s)) return NULL;
  if (n != s.ndim) return mix_err("ndim=%d != len(shape)=%d", s.ndim, n);
  int64_t b[2 * TG_MAX_DIMS];
  for (int i = 0; i < n; i++) b[2 * i] = 0, b[2 * i + 1] = shape[i] < 0 ? s.d[i] : shape[i];
  return mix_shrink(x, b, n);
}

UOp *mix_pad_to(UOp *x, const int64_t *shape, int n) {
  Shape s;
  if (!get_shape(x, &s)) return NULL;
  if (n != s.ndim) return mix_err("ndim=%d != len(shape)=%d", s.ndim, n);
  int64_t beg[TG_MAX_DIMS] = {0}, sz[TG_MAX_DIMS];
  bool same = true;
  for (int i = 0; i < n; i++) {
    sz[i] = shape[i] < 0 ? s.d[i] : shape[i];
    if (sz[i] < s.d[i]) return mix_err("cannot pad %s to smaller %s", mix_fmt_shape(&s), mix_fmt_dims(shape, n));
    same = same && sz[i] == s.d[i];
  }
  return same ? x : mix_mop(x, TG_OP_PAD, beg, sz, n);
}

/* squeeze/unsqueeze/flatten are reshapes (tinygrad's are too): no new op kinds, and the rules see one view op. */
UOp *mix_squeeze(UOp *x, int dim) {
  Shape s;
  int d;
  if (!get_shape(x, &s) || !mix_resolve_dim(x, dim, false, &d)) return NULL;
  if (s.ndim == 0 || s.d[d] != 1) return x;
  int64_t ns[TG_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < s.ndim; i++)
    if (i != d) ns[k++] = s.d[i];
  return mix_reshape(x, ns, k);
}

UOp *mix_unsqueeze(UOp *x, int dim) {
  Shape s;
  int d;
  if (!get_shape(x, &s) || !mix_resolve_dim(x, dim, true, &d)) return NULL;
  if (s.ndim + 1 > TG_MAX_DIMS) return mix_err("unsqueeze beyond %d dims", TG_MAX_DIMS);
  int64_t ns[TG_MAX_DIMS];
  for (int i = 0, k = 0; i <= s.ndim; i++) ns[i] = i == d ? 1 : s.d[k++];
  return mix_reshape(x, ns, s.ndim + 1);
}

UOp *mix_flatten(UOp *x, int start, int end) {
  Shape s;
  int a, b;
  if (!get_shape(x, &s) || !mix_resolve_dim(x, start, false, &a) || !mix_resolve_dim(x, end, false, &b)) return NULL;
  int64_t ns[TG_MAX_DIMS], p = 1;
  int k = 0;
  for (int i = 0; i < a; i++) ns[k++] = s.d[i];
  for (int i = a; i <= b && i < s.ndim; i++) p *= s.d[i];
  ns[k++] = p;
  for (int i = b + 1; i < s.ndim; i++) ns[k++] = s.d[i];
  return mix_reshape(x, ns, k);
}

/* tinygrad repeat: reshape to insert a size-1 axis before each repeated one, expand it to the repeat count, reshape
 * the pairs together; axes repeated once get no extra axis (the graph tinygrad builds, so kernels compare equal). */
UOp *mix_repeat(UOp *x, const int64_t *repeats, int n) {
  Shape s;
  if (!get_shape(x, &s)) return NULL;
  if (n < s.ndim) return mix_err("repeat needs at least %d repeats, got %d", s.ndim, n);
  if (2 * n > TG_MAX_DIMS) return mix_err("repeat over %d dims not supported (at most %d)", n, TG_MAX_DIMS / 2);
  int64_t base[TG_MAX_DIMS], uns[TG_MAX_DIMS], exp[TG_MAX_DIMS], fin[TG_MAX_DIMS];
  int nu = 0;
  for (int i = 0; i < n; i++) {
    if (repeats[i] < 0) return mix_err("negative repeat %lld", (long long)repeats[i]);
    base[i] = i < n - s.ndim ? 1 : s.d[i - (n - s.ndim)];
  }
  for (int i = 0; i < n; i++) {
    if (repeats[i] == 1) uns[nu] = base[i], exp[nu++] = base[i];
    else uns[nu] = 1, exp[nu++] = repeats[i], uns[nu] = base[i], exp[nu++] = base[i];
    fin[i] = repeats[i] * base[i];
  }
  return mix_reshape(mix_expand(mix_reshape(x, uns, nu), exp, nu), fin, n);
}

/* tinygrad stack: STACK(x0, x1, ...) of a common dtype (consts re-made at it), then the new axis moved to `dim` */
UOp *mix_stack(UOp *const *xs, int n, int dim) {
  if (n <= 0) return mix_err("stack needs at least one tensor");
  Shape s0, si;
  for (int i = 0; i < n; i++)
    if (!xs[i]) return NULL;
  if (!get_shape(xs[0], &s0)) return NULL;
  for (int i = 1; i < n; i++) {
    if (!get_shape(xs[i], &si)) return NULL;
    if (!shape_eq(&s0, &si)) return mix_err("all shapes must match for stack, got %s and %s", mix_fmt_shape(&s0), mix_fmt_shape(&si));
  }
  int d;
  if (!mix_resolve_dim(xs[0], dim, true, &d)) return NULL;
  if (s0.ndim + 1 > TG_MAX_DIMS) return mix_err("stack beyond %d dims", TG_MAX_DIMS);
  const DType *dt = uop_derive_dtype(TG_OP_STACK, xs, (size_t)n, NULL);
  UOp **src = tg_malloc((size_t)n * sizeof *src);
  for (int i = 0; i < n; i++) {
    UOp *u = xs[i];
    src[i] = uop_is_invalid(u) ? u : u->op == TG_OP_CONST ? uop_const(dt, u->arg.c) : mix_cast(u, dt);
  }
  UOp *r = uop_new(TG_OP_STACK, dt, src, (size_t)n, arg_none());
  tg_free(src);
  if (d == 0) return r;
  int perm[TG_MAX_DIMS], k = 0;
  for (int i = 1; i <= d; i++) perm[k++] = i;
  perm[k++] = 0;
  for (int i = d + 1; i < s0.ndim + 1; i++) perm[k++] = i;
  return mix_permute(r, perm, s0.ndim + 1);
}

/* cat when some size is symbolic: every piece padded to the total on `d` (offsets are expressions), then summed (or
 * OR'ed for bools), since a STACK needs equal sizes. The pieces' other axes must match node for node. */
static UOp *cat_sym(UOp *const *xs, int n, int d) {
  SymShape s0, si;
  if (!mix_shape_sym(xs[0], &s0)) return NULL;
  UOp *total = NULL;
  for (int i = 0; i < n; i++) {
    if (!mix_shape_sym(xs[i], &si)) return NULL;
    bool ok = si.max.ndim == s0.max.ndim;
    for (int k = 0; ok && k < s0.max.ndim; k++) ok = k == d || shape_sym_dim_eq(&si, k, &s0, k);
    if (!ok) {
      char b1[200], b2[200];
      return mix_err("shapes %s and %s cannot be concatenated on dim %d", shape_sym_fmt(&s0, b1, sizeof b1), shape_sym_fmt(&si, b2, sizeof b2), d);
    }
    total = total ? uop_add(total, shape_sym_dim(&si, d)) : shape_sym_dim(&si, d);
  }
  total = mix_sint(total);
  UOp *acc = NULL, *at = uop_const_int(DT_WEAKINT, 0);
  for (int i = 0; i < n && total; i++) {
    mix_shape_sym(xs[i], &si);
    UOp *pads[2 * TG_MAX_DIMS], *zero = uop_const_int(DT_WEAKINT, 0), *size = shape_sym_dim(&si, d);
    for (int k = 0; k < 2 * si.max.ndim; k++) pads[k] = zero;
    pads[2 * d] = mix_sint(at);
    pads[2 * d + 1] = mix_sint(uop_sub(uop_sub(total, at), size));
    at = uop_add(at, size);
    UOp *p = pads[2 * d] && pads[2 * d + 1] ? mix_pad_sym(xs[i], pads, si.max.ndim) : NULL;
    if (!p) return NULL;
    acc = acc ? (acc->dtype == DT_BOOL ? mix_alu(TG_OP_OR, acc, p) : mix_add(acc, p)) : p;
  }
  return acc;
}

/* tinygrad cat: equal pieces stack and flatten the new axis into `dim`; unequal ones are each zero-padded to the
 * total along `dim` and added (the sum fuses into one kernel that reads each piece where it is valid). */
UOp *mix_cat(UOp *const *xs, int n, int dim) {
  if (n <= 0) return mix_err("cat needs at least one tensor");
  for (int i = 0; i < n; i++)
    if (!xs[i]) return NULL;
  Shape s0, si;
  SymShape ss;
  for (int i = 0; i < n; i++) {
    if (!mix_shape_sym(xs[i], &ss)) return NULL;
    if (shape_sym_is_symbolic(&ss)) {
      int d;
      return mix_resolve_dim(xs[0], dim, false, &d) ? cat_sym(xs, n, d) : NULL;
    }
  }
  int d;
  if (!get_shape(xs[0], &s0) || !mix_resolve_dim(xs[0], dim, false, &d)) return NULL;
  bool same = true;
  for (int i = 1; i < n; i++) {
    if (!get_shape(xs[i], &si)) return NULL;
    bool ok = si.ndim == s0.ndim;
    for (int k = 0; ok && k < s0.ndim; k++) ok = k == d || si.d[k] == s0.d[k];
    if (!ok) return mix_err("shapes %s and %s cannot be concatenated on dim %d", mix_fmt_shape(&s0), mix_fmt_shape(&si), d);
    same = same && si.d[d] == s0.d[d];
  }
  if (same) return mix_flatten(mix_stack(xs, n, d), d, d + 1);
  int64_t total = 0, at = 0;
  for (int i = 0; i < n; i++) {
    mix_shape(xs[i], &si);
    total += si.d[d];
  }
  UOp *acc = NULL;
  for (int i = 0; i < n; i++) {
    mix_shape(xs[i], &si);
    int64_t pads[2 * TG_MAX_DIMS] = {0};
    pads[2 * d] = at, pads[2 * d + 1] = total - at - si.d[d];
    at += si.d[d];
    UOp *p = mix_pad_constant(xs[i], pads, si.ndim, const_float(0.0));
    acc = acc ? (acc->dtype == DT_BOOL ? mix_alu(TG_OP_OR, acc, p) : mix_add(acc, p)) : p;
  }
  return acc;
}

/* floor-division based ceildiv that matches Python's -(-a // b) */
static int64_t pyceildiv(int64_t a, int64_t b) {
  int64_t na = -a, q = na / b;
  if ((na % b != 0) && ((na < 0) != (b < 0))) q--;
  return -q;
}

/* Windows that do not overlap (stride >= kernel, no dilation, the last window inside the input) as a plain view:
 * each axis shrunk to o*s, split into (o, s), shrunk to (o, k). Not tinygrad's: its _pool always goes through repeat,
 * and the gradient of a repeat is a sum over the repeats, which for a 2x2 max pool becomes a 3x3 reduce of gated
 * div/mod loads per input pixel (beautiful_mnist's pool backward 16.5 ms a step); a view's gradient is a view (pad,
 * reshape), so the backward is elementwise. Same values, same kernels. NULL when the windows overlap. */
static UOp *pool_disjoint(UOp *x, const Shape *s, const int64_t *k, int nk, const int64_t *stride,
                          const int64_t *dilation, const int64_t *o_) {
  int nn = s->ndim - nk;
  for (int j = 0; j < nk; j++)
    if (dilation[j] != 1 || stride[j] < k[j] || o_[j] * stride[j] > s->d[nn + j]) return NULL;
  int64_t a[TG_MAX_DIMS];
  for (int j = 0; j < nn; j++) a[j] = -1;
  for (int j = 0; j < nk; j++) a[nn + j] = o_[j] * stride[j];
  x = mix_shrink_to(x, a, s->ndim);
  for (int j = 0; j < nn; j++) a[j] = s->d[j];
  for (int j = 0; j < nk; j++) a[nn + 2 * j] = o_[j], a[nn + 2 * j + 1] = stride[j];
  x = mix_reshape(x, a, nn + 2 * nk);
  for (int j = 0; j < nn; j++) a[j] = -1;
  for (int j = 0; j < nk; j++) a[nn + 2 * j] = o_[j], a[nn + 2 * j + 1] = k[j];
  x = mix_shrink_to(x, a, nn + 2 * nk);
  int perm[TG_MAX_DIMS], p = 0;
  for (int j = 0; j < nn; j++) perm[p++] = j;
  for (int j = 0; j < nk; j++) perm[p++] = nn + 2 * j;
  for (int j = 0; j < nk; j++) perm[p++] = nn + 2 * j + 1;
  return mix_permute(x, perm, nn + 2 * nk);
}

/* tinygrad _pool: sliding windows over the last nk axes -> (..., o_1..o_n, k_1..k_n). The general path is
 * tinygrad's repeat/shrink/reshape chain (a window at every stride, dilation by the reshape's stride); disjoint
 * windows take the plain view above (POOL_VIEW=0 turns that off, for comparing with tinygrad's graphs). */
UOp *mix_pool(UOp *x, const int64_t *k, int nk, const int64_t *stride, const int64_t *dilation) {
  Shape s;
  if (!get_shape(x, &s)) return NULL;
  if (s.ndim < nk) return mix_err("can't pool %s with %d kernel dims", mix_fmt_shape(&s), nk);
  int nn = s.ndim - nk;
  if (nn + 3 * nk > TG_MAX_DIMS) return mix_err("pooling needs more than %d dims", TG_MAX_DIMS);
  int64_t i_[TG_MAX_DIMS], o_[TG_MAX_DIMS], f_[TG_MAX_DIMS];
  for (int j = 0; j < nk; j++) {
    i_[j] = s.d[nn + j];
    if (k[j] < 1 || stride[j] < 1 || dilation[j] < 1) return mix_err("kernel, stride and dilation must be positive");
    if (dilation[j] * (k[j] - 1) + 1 > i_[j]) return mix_err("kernel size cannot be greater than actual input size %s", mix_fmt_shape(&s));
    o_[j] = pyceildiv(i_[j] - dilation[j] * (k[j] - 1), stride[j]);
    f_[j] = TG_MAX(1, pyceildiv(o_[j] * stride[j] - dilation[j], i_[j]));
  }
  if (tg_getenv_int("POOL_VIEW", 1)) {
    UOp *v = pool_disjoint(x, &s, k, nk, stride, dilation, o_);
    if (v) return v;
  }
  int64_t a[TG_MAX_DIMS];
  for (int j = 0; j < nn; j++) a[j] = 1;
  for (int j = 0; j < nk; j++) a[nn + j] = pyceildiv(k[j] * (i_[j] * f_[j] + dilation[j]), i_[j]);
  x = mix_repeat(x, a, s.ndim);
  for (int j = 0; j < nn; j++) a[j] = -1;
  for (int j = 0; j < nk; j++) a[nn + j] = k[j] * (i_[j] * f_[j] + dilation[j]);
  x = mix_shrink_to(x, a, s.ndim);
  for (int j = 0; j < nn; j++) a[j] = s.d[j];
  for (int j = 0; j < nk; j++) a[nn + 2 * j] = k[j], a[nn + 2 * j + 1] = i_[j] * f_[j] + dilation[j];
  x = mix_reshape(x, a, nn + 2 * nk);
  for (int j = 0; j < nn; j++) a[j] = -1;
  for (int j = 0; j < nk; j++) a[nn + 2 * j] = k[j], a[nn + 2 * j + 1] = o_[j] * stride[j];
  x = mix_shrink_to(x, a, nn + 2 * nk);
  for (int j = 0; j < nn; j++) a[j] = s.d[j];
  for (int j = 0; j < nk; j++) a[nn + 3 * j] = k[j], a[nn + 3 * j + 1] = o_[j], a[nn + 3 * j + 2] = stride[j];
  x = mix_reshape(x, a, nn + 3 * nk);
  for (int j = 0; j < nn; j++) a[j] = -1;
  for (int j = 0; j < nk; j++) a[nn + 3 * j] = k[j], a[nn + 3 * j + 1] = o_[j], a[nn + 3 * j + 2] = 1;
  x = mix_shrink_to(x, a, nn + 3 * nk);
  for (int j = 0; j < nn; j++) a[j] = s.d[j];
  for (int j = 0; j < nk; j++) a[nn + 2 * j] = k[j], a[nn + 2 * j + 1] = o_[j];
  x = mix_reshape(x, a, nn + 2 * nk);
  int perm[TG_MAX_DIMS], p = 0;
  for (int j = 0; j < nn; j++) perm[p++] = j;
  for (int j = 0; j < nk; j++) perm[p++] = nn + 2 * j + 1;
  for (int j = 0; j < nk; j++) perm[p++] = nn + 2 * j;
  return mix_permute(x, perm, nn + 2 * nk);
}

/* OpMixin._pad_constant: negative pads shrink first; a nonzero fill goes through a bool mask and WHERE */
UOp *mix_pad_constant(UOp *x, const int64_t *pads, int n, Const value) {
  Shape s;
  if (!get_shape(x, &s)) return NULL;
  if (n != s.ndim) return mix_err("padding length is improper, %d pairs for ndim=%d", n, s.ndim);
  bool has_neg = false;
  for (int i = 0; i < 2 * n; i++) has_neg = has_neg || pads[i] < 0;
  int64_t pp[2 * TG_MAX_DIMS];
  UOp *X = x;
  if (has_neg) {
    int64_t b[2 * TG_MAX_DIMS];
    for (int i = 0; i < n; i++) {
      b[2 * i] = -TG_MIN(pads[2 * i], 0);
      b[2 * i + 1] = TG_MIN(pads[2 * i + 1] + s.d[i], s.d[i]);
      if (b[2 * i] > b[2 * i + 1]) return mix_err("negative padding removes more than axis %d of %s", i, mix_fmt_shape(&s));
      pp[2 * i] = TG_MAX(pads[2 * i], 0), pp[2 * i + 1] = TG_MAX(pads[2 * i + 1], 0);
    }
    X = mix_shrink(x, b, n);
  } else memcpy(pp, pads, (size_t)(2 * n) * sizeof(int64_t));
  UOp *base = mix_pad_raw(X, pp, n);
  bool zero = (value.kind == CK_FLOAT && value.f == 0.0) || (value.kind == CK_INT && value.i == 0) ||
              (value.kind == CK_BOOL && !value.b);
  if (zero) return base;
  UOp *mask = mix_pad_raw(mix_const_like(X, const_bool(true), DT_BOOL), pp, n);
  return mix_where(mask, base, mix_const(value, NULL));
}

/* The reflect/replicate/circular modes of OpMixin.pad. Circular: crop negative pads, repeat the axis up to three
 * times and cut the window. Reflect and replicate: axis by axis, cat the mirrored (getitem with step -1, the edge
 * excluded) or edge (expand of the last slice) pieces on both sides, then crop the negative pads. */
UOp *mix_pad_mode(UOp *x, const int64_t *pads, int n, tg_pad_mode mode, Const value) {
  Shape s;
  if (!get_shape(x, &s)) return NULL;
  if (n != s.ndim) return mix_err("padding length is improper, %d pairs for ndim=%d", n, s.ndim);
  if (mode == TG_PAD_CONSTANT) return mix_pad_constant(x, pads, n, value);
  if (mode == TG_PAD_CIRCULAR) {
    int64_t b[2 * TG_MAX_DIMS], pp[2 * TG_MAX_DIMS], rep[TG_MAX_DIMS];
    for (int i = 0; i < n; i++) {
      b[2 * i] = -TG_MIN(pads[2 * i], 0), b[2 * i + 1] = TG_MIN(pads[2 * i + 1] + s.d[i], s.d[i]);
      if (b[2 * i] > b[2 * i + 1]) return mix_err("negative padding removes more than axis %d of %s", i, mix_fmt_shape(&s));
      pp[2 * i] = TG_MAX(pads[2 * i], 0), pp[2 * i + 1] = TG_MAX(pads[2 * i + 1], 0);
    }
    UOp *X = mix_shrink(x, b, n);
    Shape xs;
    if (!get_shape(X, &xs)) return NULL;
    for (int i = 0; i < n; i++) {
      if (pp[2 * i] > xs.d[i] || pp[2 * i + 1] > xs.d[i]) return mix_err("Padding value causes wrapping around more than once.");
      rep[i] = 1 + (pp[2 * i] != 0) + (pp[2 * i + 1] != 0);
    }
    UOp *R = mix_repeat(X, rep, n);
    Shape rs;
    if (!get_shape(R, &rs)) return NULL;
    for (int i = 0; i < n; i++) {
      b[2 * i] = pp[2 * i] == 0 ? 0 : xs.d[i] - pp[2 * i];
      b[2 * i + 1] = pp[2 * i + 1] == 0 ? rs.d[i] : rs.d[i] - xs.d[i] + pp[2 * i + 1];
    }
    return mix_shrink(R, b, n);
  }
  if (mode != TG_PAD_REFLECT && mode != TG_PAD_REPLICATE) return mix_err("unknown pad mode %d", (int)mode);
  UOp *X = x;
  for (int d = 0; d < n; d++) {
    int64_t pB = TG_MAX(pads[2 * d], 0), pA = TG_MAX(pads[2 * d + 1], 0);
    Shape xs;
    if (!get_shape(X, &xs)) return NULL;
    int64_t sz = xs.d[d];
    UOp *xB = NULL, *xA = NULL;
    if (mode == TG_PAD_REFLECT) {
      if (pB >= sz || pA >= sz)
        return mix_err("Padding (%lld, %lld) should be less than the input size=%lld for dim=%d.", (long long)pB, (long long)pA, (long long)sz, d);
      tg_index idx[TG_MAX_DIMS];
      for (int i = 0; i < xs.ndim; i++) idx[i] = (tg_index){TG_IDX_SLICE, 0, 0, 1, false, false, NULL};
      if (pB > 0) {
        idx[d] = (tg_index){TG_IDX_SLICE, pB, 0, -1, true, true, NULL};
        xB = mix_getitem(X, idx, NULL, (size_t)xs.ndim);
      }
      if (pA > 0) {
        idx[d] = (tg_index){TG_IDX_SLICE, sz - 2, sz - 2 - pA, -1, true, sz - 2 - pA >= 0, NULL};
        xA = mix_getitem(X, idx, NULL, (size_t)xs.ndim);
      }
    } else {
      int64_t b[2 * TG_MAX_DIMS], e[TG_MAX_DIMS];
      for (int i = 0; i < xs.ndim; i++) b[2 * i] = 0, b[2 * i + 1] = xs.d[i], e[i] = -1;
      if (pB > 0) {
        b[2 * d] = 0, b[2 * d + 1] = 1, e[d] = pB;
        xB = mix_expand(mix_shrink(X, b, xs.ndim), e, xs.ndim);
      }
      if (pA > 0) {
        b[2 * d] = xs.d[d] - 1, b[2 * d + 1] = xs.d[d], e[d] = pA;
        xA = mix_expand(mix_shrink(X, b, xs.ndim), e, xs.ndim);
      }
    }
    UOp *pieces[3];
    int np = 0;
    if (xB) pieces[np++] = xB;
    pieces[np++] = X;
    if (xA) pieces[np++] = xA;
    X = mix_cat(pieces, np, d); /* a cat of one piece still stacks and flattens, as tinygrad's */
  }
  Shape xs;
  if (!get_shape(X, &xs)) return NULL;
  int64_t b[2 * TG_MAX_DIMS];
  for (int i = 0; i < n; i++) b[2 * i] = -TG_MIN(pads[2 * i], 0), b[2 * i + 1] = TG_MIN(pads[2 * i + 1] + xs.d[i], xs.d[i]);
  return mix_shrink(X, b, n);
}
