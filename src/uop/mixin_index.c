/* mixin_index.c — tinygrad's __getitem__ (OpMixin._getitem): ints, slices with steps, newaxis and ellipsis become
 * SHRINK/FLIP/PAD/RESHAPE views; tensor indices become one-hot masks summed away (consecutive tensor indices use one
 * linear index). */
#include "uop/mixin.h"

/* One index entry after normalization: the axis size it leaves (size), the bounds to shrink to [b0, b1) and the
 * stride (negative: flip); an int index collapses its axis, None inserts one, a tensor index keeps its node. */
typedef struct Parsed {
  int64_t size, b0, b1, stride;
  bool collapse, is_none, is_tensor;
  UOp *tensor;
} Parsed;

/* Python's slice.indices(size) followed by tinygrad's boundary normalization */
static void parse_slice(const tg_index *ix, int64_t size, Parsed *p) {
  int64_t step = ix->step, lower = step > 0 ? 0 : -1, upper = step > 0 ? size : size - 1, start, stop;
  if (!ix->has_start) start = step < 0 ? upper : lower;
  else {
    start = ix->start < 0 ? ix->start + size : ix->start;
    start = start < lower ? lower : start > upper ? upper : start;
  }
  if (!ix->has_stop) stop = step < 0 ? lower : upper;
  else {
    stop = ix->stop < 0 ? ix->stop + size : ix->stop;
    stop = stop < lower ? lower : stop > upper ? upper : stop;
  }
  int64_t b0 = start, b1 = stop;
  if (step * (b1 - b0) < 0) b0 = b1 = 0;
  else if (step < 0) { int64_t t = b0; b0 = b1 + 1; b1 = t + 1; }
  int64_t ast = step < 0 ? -step : step;
  p->size = (b1 - b0 + ast - 1) / ast;
  if (p->size < 0) p->size = 0;
  p->b0 = b0, p->b1 = b1, p->stride = step;
}

/* The views of the basic indices, in tinygrad's order: one SHRINK to the bounds, one FLIP of the negative-stride
 * axes, then for |stride| > 1 pad each axis up to a multiple of the stride, split it into (size/stride, stride) and
 * keep the first of every stride elements (shrink + reshape: strided slicing is a view, no gather). */
static UOp *apply_view_ops(UOp *x, const Parsed *m, int n) {
  int64_t b[2 * TG_MAX_DIMS];
  int flips[TG_MAX_DIMS], nf = 0;
  bool strided = false;
  for (int i = 0; i < n; i++) {
    b[2 * i] = m[i].b0, b[2 * i + 1] = m[i].b1;
    if (m[i].stride < 0) flips[nf++] = i;
    strided = strided || (m[i].stride != 1 && m[i].stride != -1);
  }
  x = mix_flip(mix_shrink(x, b, n), flips, nf);
  if (!strided || !x) return x;
  if (2 * n > TG_MAX_DIMS) return mix_err("strided slicing over %d dims not supported (at most %d)", n, TG_MAX_DIMS / 2);
  Shape s;
  if (!mix_shape(x, &s)) return NULL;
  int64_t to[TG_MAX_DIMS], rs[TG_MAX_DIMS], sk[TG_MAX_DIMS], fin[TG_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    int64_t st = m[i].stride < 0 ? -m[i].stride : m[i].stride;
    to[i] = (s.d[i] + st - 1) / st * st;
    rs[2 * i] = to[i] / st, rs[2 * i + 1] = st;
    sk[2 * i] = to[i] / st, sk[2 * i + 1] = 1;
    fin[i] = to[i] / st;
  }
  return mix_reshape(mix_shrink_to(mix_reshape(mix_pad_to(x, to, n), rs, 2 * n), sk, 2 * n), fin, n);
}

/* Tensor indices (already made non-negative), the one-hot path of _getitem: for each indexed axis a mask
 * idx == arange(size) laid along it, the masks ANDed, x selected with WHERE and the indexed axes summed away; the
 * broadcast index shape goes where the first indexed axis was (or to the front when the indexed axes are not
 * adjacent, numpy's rule). Several adjacent index tensors become one linear index over the merged axes first (one
 * mask instead of one per axis), with out-of-range combinations masked to 0 as the recursive getitem does. */
static UOp *index_by_tensors(UOp *x, const int *dims, UOp *const *tensors, int nt) {
  Shape xs, big, ts;
  if (!mix_shape(x, &xs) || !mix_shape(tensors[0], &big)) return NULL;
  for (int i = 1; i < nt; i++) {
    if (!mix_shape(tensors[i], &ts)) return NULL;
    Shape prev = big;
    if (!shape_broadcast(&prev, &ts, &big)) return mix_err("cannot broadcast indices %s and %s", mix_fmt_shape(&prev), mix_fmt_shape(&ts));
  }
  bool consecutive = true;
  for (int i = 0; i < nt; i++) consecutive = consecutive && dims[i] == dims[0] + i;
  if (nt > 1 && consecutive) {
    int64_t ishp[TG_MAX_DIMS], stride = 1;
    for (int i = 0; i < nt; i++) ishp[i] = xs.d[dims[i]];
    UOp *lin = NULL, *valid = NULL;
    for (int i = 0; i < nt; i++) {
      stride = 1;
      for (int k = i + 1; k < nt; k++) stride *= ishp[k];
      UOp *term = mix_mul(tensors[i], mix_weak_int(stride));
      lin = lin ? mix_add(lin, term) : term;
      UOp *ok = mix_alu(TG_OP_AND, mix_ge(tensors[i], mix_weak_int(0)), mix_lt(tensors[i], mix_weak_int(ishp[i])));
      valid = valid ? mix_alu(TG_OP_AND, valid, ok) : ok;
    }
    int npre = dims[0], npost = xs.ndim - dims[nt - 1] - 1;
    int64_t rs[TG_MAX_DIMS], prod = 1;
    int k = 0;
    for (int i = 0; i < nt; i++) prod *= ishp[i];
    for (int i = 0; i < npre; i++) rs[k++] = xs.d[i];
    rs[k++] = prod;
    for (int i = 0; i < npost; i++) rs[k++] = xs.d[dims[nt - 1] + 1 + i];
    UOp *flat = mix_reshape(x, rs, k);
    UOp *li = mix_where(valid, lin, mix_weak_int(0));
    li = mix_where(mix_lt(li, mix_weak_int(0)), mix_add(li, mix_weak_int(prod)), li); /* the recursive getitem's negative-index fix */
    UOp *picked = index_by_tensors(flat, &npre, &li, 1);
    if (npre + big.ndim + npost > TG_MAX_DIMS) return mix_err("too many dims");
    k = 0;
    for (int i = 0; i < npre; i++) rs[k++] = 1;
    for (int i = 0; i < big.ndim; i++) rs[k++] = big.d[i];
    for (int i = 0; i < npost; i++) rs[k++] = 1;
    return mix_where(mix_reshape(valid, rs, k), picked, mix_weak_int(0));
  }
  if (xs.ndim + big.ndim > TG_MAX_DIMS) return mix_err("too many dims");
  Shape pre = {0, {0}};
  for (int i = 0; i < dims[0]; i++) pre.d[pre.ndim++] = xs.d[i];
  for (int i = 0; i < big.ndim; i++) pre.d[pre.ndim++] = big.d[i];
  for (int i = dims[0]; i < xs.ndim; i++) pre.d[pre.ndim++] = xs.d[i];
  UOp *mask = NULL;
  for (int j = 0; j < nt; j++) {
    if (!mix_shape(tensors[j], &ts)) return NULL;
    int64_t rs[TG_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < ts.ndim; i++) rs[k++] = ts.d[i];
    for (int i = 0; i < xs.ndim - dims[0]; i++) rs[k++] = 1;
    if (k > TG_MAX_DIMS) return mix_err("too many dims");
    UOp *i_ = mix_expand(mix_reshape(tensors[j], rs, k), pre.d, pre.ndim);
    if (!i_) return NULL;
    UOp *m = mix_one_hot_along_dim(i_, xs.d[dims[j]], dims[j] - xs.ndim);
    mask = mask ? mix_alu(TG_OP_AND, mask, m) : m;
  }
  int64_t ra[TG_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < dims[0]; i++) ra[k++] = xs.d[i];
  for (int i = 0; i < big.ndim; i++) ra[k++] = 1;
  for (int i = dims[0]; i < xs.ndim; i++) ra[k++] = xs.d[i];
  int sum_axis[TG_MAX_DIMS];
  for (int j = 0; j < nt; j++) sum_axis[j] = dims[j] + big.ndim;
  UOp *r = mix_sum(mix_where(mask, mix_reshape(x, ra, k), mix_weak_int(0)), sum_axis, nt, false, x->dtype);
  bool contiguous_dims = true;
  for (int j = 0; j < nt; j++) contiguous_dims = contiguous_dims && dims[j] == dims[0] + j;
  if (dims[0] != 0 && nt != 1 && !contiguous_dims) {
    int nd = mix_ndim(r), perm[TG_MAX_DIMS], p = 0;
    for (int i = dims[0]; i < dims[0] + big.ndim; i++) perm[p++] = i;
    for (int i = 0; i < dims[0]; i++) perm[p++] = i;
    for (int i = dims[0] + big.ndim; i < nd; i++) perm[p++] = i;
    r = mix_permute(r, perm, nd);
  }
  return r;
}

/* The entry: the ellipsis (or the missing tail) expands to full slices, each entry is parsed against its axis, the
 * views are applied, collapsed axes and new axes are one reshape, and tensor indices go last through the one-hot
 * path. */
UOp *mix_getitem(UOp *x, const tg_index *idx, UOp *const *tensors, size_t n) {
  Shape s;
  if (!x || !mix_shape(x, &s)) return NULL;
  if (n && !idx) return mix_err("indices are NULL");
  if (n > TG_MAX_DIMS * 2) return mix_err("too many indices (%zu)", n);
  int nell = 0, nnone = 0;
  for (size_t i = 0; i < n; i++) {
    if (idx[i].kind == TG_IDX_ELLIPSIS) nell++;
    else if (idx[i].kind == TG_IDX_NEWAXIS) nnone++;
    else if ((unsigned)idx[i].kind > TG_IDX_TENSOR) return mix_err("unknown index kind %d", (int)idx[i].kind);
  }
  if (nell > 1) return mix_err("indices can only have a single ellipsis");
  int num_real = (int)n - nell - nnone;
  if (num_real > s.ndim) return mix_err("too many indices (%d) for %dD", num_real, s.ndim);
  /* normalized index list: the ellipsis (or the end) expands to full slices */
  tg_index norm[3 * TG_MAX_DIMS];
  UOp *norm_t[3 * TG_MAX_DIMS];
  int nn = 0;
  bool placed = false;
  for (size_t i = 0; i <= n; i++) {
    if ((i < n && idx[i].kind == TG_IDX_ELLIPSIS) || (i == n && !placed && !nell)) {
      for (int k = 0; k < s.ndim - num_real; k++) norm_t[nn] = NULL, norm[nn++] = (tg_index){TG_IDX_SLICE, 0, 0, 1, false, false, NULL};
      placed = true;
      continue;
    }
    if (i < n) norm_t[nn] = tensors ? tensors[i] : NULL, norm[nn++] = idx[i];
  }
  if (nn > TG_MAX_DIMS) return mix_err("too many dims after indexing");
  Parsed parsed[3 * TG_MAX_DIMS];
  int dim = 0;
  for (int i = 0; i < nn; i++) {
    Parsed *p = &parsed[i];
    memset(p, 0, sizeof *p);
    const tg_index *ix = &norm[i];
    int64_t size = ix->kind == TG_IDX_NEWAXIS ? 1 : s.d[dim];
    p->size = size, p->b0 = 0, p->b1 = size, p->stride = 1;
    switch (ix->kind) {
    case TG_IDX_NEWAXIS: p->is_none = true; break;
    case TG_IDX_INT:
      if (ix->start >= size || ix->start < -size) return mix_err("index=%lld is out of bounds with size=%lld", (long long)ix->start, (long long)size);
      p->b0 = ix->start >= 0 ? ix->start : ix->start + size;
      p->b1 = p->b0 + 1;
      p->collapse = true;
      break;
    case TG_IDX_SLICE:
      if (ix->step == 0) return mix_err("slice cannot have 0 as step");
      parse_slice(ix, size, p);
      break;
    case TG_IDX_TENSOR: {
      UOp *t = norm_t[i];
      if (!t) return mix_err("index tensor is NULL");
      if (!dt_is_int(t->dtype)) return mix_err("index dtype %s is not supported", t->dtype->name);
      p->is_tensor = true;
      p->tensor = mix_where(mix_lt(t, mix_weak_int(0)), mix_add(t, mix_weak_int(size)), t);
      break;
    }
    default: break;
    }
    if (!p->is_none) dim++;
  }
  Parsed mops[TG_MAX_DIMS];
  int nm = 0;
  for (int i = 0; i < nn; i++)
    if (!parsed[i].is_none) mops[nm++] = parsed[i];
  x = apply_view_ops(x, mops, nm);
  int64_t rs[TG_MAX_DIMS];
  int nx = 0, adims[TG_MAX_DIMS], nt = 0;
  UOp *picked[TG_MAX_DIMS];
  for (int i = 0; i < nn; i++) {
    if (parsed[i].collapse) continue;
    if (parsed[i].is_tensor) adims[nt] = nx, picked[nt++] = parsed[i].tensor;
    rs[nx++] = parsed[i].size;
  }
  x = mix_reshape(x, rs, nx);
  if (!nt || !x) return x;
  return index_by_tensors(x, adims, picked, nt);
}
