/* index.c — tinygrad's __getitem__ (OpMixin._getitem): ints, slices with steps, newaxis and ellipsis become
 * SHRINK/FLIP/PAD/RESHAPE views; tensor indices become one-hot masks summed away (consecutive tensor indices use one
 * linear index). Also the public movement entry points. */
#include <math.h>
#include "tensor/tensor.h"

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

static UOp *apply_view_ops(UOp *x, const Parsed *m, int n) {
  int64_t b[2 * TG_MAX_DIMS];
  int flips[TG_MAX_DIMS], nf = 0;
  bool strided = false;
  for (int i = 0; i < n; i++) {
    b[2 * i] = m[i].b0, b[2 * i + 1] = m[i].b1;
    if (m[i].stride < 0) flips[nf++] = i;
    strided = strided || (m[i].stride != 1 && m[i].stride != -1);
  }
  x = tensor_flip(tensor_shrink(x, b, n), flips, nf);
  if (!strided || !x) return x;
  if (2 * n > TG_MAX_DIMS) return tensor_err("strided slicing over %d dims not supported (at most %d)", n, TG_MAX_DIMS / 2);
  Shape s;
  if (!tensor_shape(x, &s)) return NULL;
  int64_t to[TG_MAX_DIMS], rs[TG_MAX_DIMS], sk[TG_MAX_DIMS], fin[TG_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    int64_t st = m[i].stride < 0 ? -m[i].stride : m[i].stride;
    to[i] = (s.d[i] + st - 1) / st * st;
    rs[2 * i] = to[i] / st, rs[2 * i + 1] = st;
    sk[2 * i] = to[i] / st, sk[2 * i + 1] = 1;
    fin[i] = to[i] / st;
  }
  return tensor_reshape(tensor_shrink_to(tensor_reshape(tensor_pad_to(x, to, n), rs, 2 * n), sk, 2 * n), fin, n);
}

/* tensor indices (already made non-negative), the one-hot path of _getitem */
static UOp *tensor_index(UOp *x, const int *dims, UOp *const *tensors, int nt) {
  Shape xs, big, ts;
  if (!tensor_shape(x, &xs) || !tensor_shape(tensors[0], &big)) return NULL;
  for (int i = 1; i < nt; i++) {
    if (!tensor_shape(tensors[i], &ts)) return NULL;
    Shape prev = big;
    if (!shape_broadcast(&prev, &ts, &big)) return tensor_err("cannot broadcast indices %s and %s", tensor_fmt_shape(&prev), tensor_fmt_shape(&ts));
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
      UOp *term = tensor_mul(tensors[i], tensor_weak_int(stride));
      lin = lin ? tensor_add(lin, term) : term;
      UOp *ok = tensor_alu(TG_OP_AND, tensor_ge(tensors[i], tensor_weak_int(0)), tensor_lt(tensors[i], tensor_weak_int(ishp[i])));
      valid = valid ? tensor_alu(TG_OP_AND, valid, ok) : ok;
    }
    int npre = dims[0], npost = xs.ndim - dims[nt - 1] - 1;
    int64_t rs[TG_MAX_DIMS], prod = 1;
    int k = 0;
    for (int i = 0; i < nt; i++) prod *= ishp[i];
    for (int i = 0; i < npre; i++) rs[k++] = xs.d[i];
    rs[k++] = prod;
    for (int i = 0; i < npost; i++) rs[k++] = xs.d[dims[nt - 1] + 1 + i];
    UOp *flat = tensor_reshape(x, rs, k);
    UOp *li = tensor_where(valid, lin, tensor_weak_int(0));
    li = tensor_where(tensor_lt(li, tensor_weak_int(0)), tensor_add(li, tensor_weak_int(prod)), li); /* the recursive getitem's negative-index fix */
    UOp *picked = tensor_index(flat, &npre, &li, 1);
    if (npre + big.ndim + npost > TG_MAX_DIMS) return tensor_err("too many dims");
    k = 0;
    for (int i = 0; i < npre; i++) rs[k++] = 1;
    for (int i = 0; i < big.ndim; i++) rs[k++] = big.d[i];
    for (int i = 0; i < npost; i++) rs[k++] = 1;
    return tensor_where(tensor_reshape(valid, rs, k), picked, tensor_weak_int(0));
  }
  if (xs.ndim + big.ndim > TG_MAX_DIMS) return tensor_err("too many dims");
  Shape pre = {0, {0}};
  for (int i = 0; i < dims[0]; i++) pre.d[pre.ndim++] = xs.d[i];
  for (int i = 0; i < big.ndim; i++) pre.d[pre.ndim++] = big.d[i];
  for (int i = dims[0]; i < xs.ndim; i++) pre.d[pre.ndim++] = xs.d[i];
  UOp *mask = NULL;
  for (int j = 0; j < nt; j++) {
    if (!tensor_shape(tensors[j], &ts)) return NULL;
    int64_t rs[TG_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < ts.ndim; i++) rs[k++] = ts.d[i];
    for (int i = 0; i < xs.ndim - dims[0]; i++) rs[k++] = 1;
    if (k > TG_MAX_DIMS) return tensor_err("too many dims");
    UOp *i_ = tensor_expand(tensor_reshape(tensors[j], rs, k), pre.d, pre.ndim);
    if (!i_) return NULL;
    UOp *m = tensor_one_hot_along_dim(i_, xs.d[dims[j]], dims[j] - xs.ndim);
    mask = mask ? tensor_alu(TG_OP_AND, mask, m) : m;
  }
  int64_t ra[TG_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < dims[0]; i++) ra[k++] = xs.d[i];
  for (int i = 0; i < big.ndim; i++) ra[k++] = 1;
  for (int i = dims[0]; i < xs.ndim; i++) ra[k++] = xs.d[i];
  int sum_axis[TG_MAX_DIMS];
  for (int j = 0; j < nt; j++) sum_axis[j] = dims[j] + big.ndim;
  UOp *r = tensor_sum(tensor_where(mask, tensor_reshape(x, ra, k), tensor_weak_int(0)), sum_axis, nt, false, x->dtype);
  bool contiguous_dims = true;
  for (int j = 0; j < nt; j++) contiguous_dims = contiguous_dims && dims[j] == dims[0] + j;
  if (dims[0] != 0 && nt != 1 && !contiguous_dims) {
    int nd = tensor_ndim(r), perm[TG_MAX_DIMS], p = 0;
    for (int i = dims[0]; i < dims[0] + big.ndim; i++) perm[p++] = i;
    for (int i = 0; i < dims[0]; i++) perm[p++] = i;
    for (int i = dims[0] + big.ndim; i < nd; i++) perm[p++] = i;
    r = tensor_permute(r, perm, nd);
  }
  return r;
}

UOp *tensor_getitem(UOp *x, const tg_index *idx, size_t n) {
  Shape s;
  if (!x || !tensor_shape(x, &s)) return NULL;
  if (n && !idx) return tensor_err("indices are NULL");
  if (n > TG_MAX_DIMS * 2) return tensor_err("too many indices (%zu)", n);
  int nell = 0, nnone = 0;
  for (size_t i = 0; i < n; i++) {
    if (idx[i].kind == TG_IDX_ELLIPSIS) nell++;
    else if (idx[i].kind == TG_IDX_NEWAXIS) nnone++;
    else if ((unsigned)idx[i].kind > TG_IDX_TENSOR) return tensor_err("unknown index kind %d", (int)idx[i].kind);
  }
  if (nell > 1) return tensor_err("indices can only have a single ellipsis");
  int num_real = (int)n - nell - nnone;
  if (num_real > s.ndim) return tensor_err("too many indices (%d) for %dD", num_real, s.ndim);
  /* normalized index list: the ellipsis (or the end) expands to full slices */
  tg_index norm[3 * TG_MAX_DIMS];
  int nn = 0;
  bool placed = false;
  for (size_t i = 0; i <= n; i++) {
    if ((i < n && idx[i].kind == TG_IDX_ELLIPSIS) || (i == n && !placed && !nell)) {
      for (int k = 0; k < s.ndim - num_real; k++) norm[nn++] = (tg_index){TG_IDX_SLICE, 0, 0, 1, false, false, NULL};
      placed = true;
      continue;
    }
    if (i < n) norm[nn++] = idx[i];
  }
  if (nn > TG_MAX_DIMS) return tensor_err("too many dims after indexing");
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
      if (ix->start >= size || ix->start < -size) return tensor_err("index=%lld is out of bounds with size=%lld", (long long)ix->start, (long long)size);
      p->b0 = ix->start >= 0 ? ix->start : ix->start + size;
      p->b1 = p->b0 + 1;
      p->collapse = true;
      break;
    case TG_IDX_SLICE:
      if (ix->step == 0) return tensor_err("slice cannot have 0 as step");
      parse_slice(ix, size, p);
      break;
    case TG_IDX_TENSOR: {
      if (!ix->tensor) return tensor_err("index tensor is NULL");
      UOp *t = tensor_in(ix->tensor, 2);
      if (!t) return NULL;
      if (!dt_is_int(t->dtype)) return tensor_err("index dtype %s is not supported", t->dtype->name);
      p->is_tensor = true;
      p->tensor = tensor_where(tensor_lt(t, tensor_weak_int(0)), tensor_add(t, tensor_weak_int(size)), t);
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
  UOp *tensors[TG_MAX_DIMS];
  for (int i = 0; i < nn; i++) {
    if (parsed[i].collapse) continue;
    if (parsed[i].is_tensor) adims[nt] = nx, tensors[nt++] = parsed[i].tensor;
    rs[nx++] = parsed[i].size;
  }
  x = tensor_reshape(x, rs, nx);
  if (!nt || !x) return x;
  return tensor_index(x, adims, tensors, nt);
}

/* ------------------------------------------------------------------------------------------------ public API */

static bool int_args(const void *p, size_t n, const char *what) {
  if (n && !p) return tensor_err("%s is NULL", what), false;
  if (n > TG_MAX_DIMS) return tensor_err("%zu %s, at most %d supported", n, what, TG_MAX_DIMS), false;
  return true;
}

tg_tensor *tg_reshape(const tg_tensor *t, const int64_t *shape, size_t ndim) {
  tensor_ctx_begin("tg_reshape");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x && int_args(shape, ndim, "sizes") ? tensor_reshape(x, shape, (int)ndim) : NULL);
}

tg_tensor *tg_permute(const tg_tensor *t, const int *order, size_t ndim) {
  tensor_ctx_begin("tg_permute");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x && int_args(order, ndim, "axes") ? tensor_permute(x, order, (int)ndim) : NULL);
}

tg_tensor *tg_transpose(const tg_tensor *t, int dim0, int dim1) {
  tensor_ctx_begin("tg_transpose");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? tensor_transpose(x, dim0, dim1) : NULL);
}

tg_tensor *tg_expand(const tg_tensor *t, const int64_t *shape, size_t ndim) {
  tensor_ctx_begin("tg_expand");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x && int_args(shape, ndim, "sizes") ? tensor_expand(x, shape, (int)ndim) : NULL);
}

tg_tensor *tg_pad(const tg_tensor *t, const int64_t *pads, size_t ndim, tg_pad_mode mode, double value) {
  tensor_ctx_begin("tg_pad");
  UOp *x = tensor_in(t, 1), *r = NULL;
  if (x && int_args(pads, ndim, "pad pairs")) {
    if ((unsigned)mode > TG_PAD_CIRCULAR) r = tensor_err("mode=%d is not supported", (int)mode);
    else if ((int)ndim != t->shape.ndim) r = tensor_err("padding length is improper, %zu pairs for %s", ndim, tensor_fmt_shape(&t->shape));
    else {
      /* an integral fill of an int or bool tensor is an int constant (tinygrad's Python int): the dtype stays */
      bool int_fill = (dt_is_int(x->dtype) || x->dtype == DT_BOOL) && value == floor(value) && fabs(value) < 9.2e18;
      r = tensor_pad_mode(x, pads, (int)ndim, mode, int_fill ? const_int((int64_t)value) : const_float(value));
    }
  }
  return tensor_ctx_end(r);
}

tg_tensor *tg_shrink(const tg_tensor *t, const int64_t *bounds, size_t ndim) {
  tensor_ctx_begin("tg_shrink");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x && int_args(bounds, ndim, "bound pairs") ? tensor_shrink(x, bounds, (int)ndim) : NULL);
}

tg_tensor *tg_flip(const tg_tensor *t, const int *axes, size_t naxes) {
  tensor_ctx_begin("tg_flip");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x && int_args(axes, naxes, "axes") ? tensor_flip(x, axes, (int)naxes) : NULL);
}

tg_tensor *tg_squeeze(const tg_tensor *t, int axis) {
  tensor_ctx_begin("tg_squeeze");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? tensor_squeeze(x, axis) : NULL);
}

tg_tensor *tg_squeeze_all(const tg_tensor *t) {
  tensor_ctx_begin("tg_squeeze_all");
  UOp *x = tensor_in(t, 1);
  if (!x) return tensor_ctx_end(NULL);
  int64_t ns[TG_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < t->shape.ndim; i++)
    if (t->shape.d[i] != 1) ns[k++] = t->shape.d[i];
  return tensor_ctx_end(tensor_reshape(x, ns, k));
}

tg_tensor *tg_unsqueeze(const tg_tensor *t, int axis) {
  tensor_ctx_begin("tg_unsqueeze");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? tensor_unsqueeze(x, axis) : NULL);
}

tg_tensor *tg_flatten(const tg_tensor *t, int start_dim, int end_dim) {
  tensor_ctx_begin("tg_flatten");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? tensor_flatten(x, start_dim, end_dim) : NULL);
}

tg_tensor *tg_getitem(const tg_tensor *t, const tg_index *idx, size_t n) {
  tensor_ctx_begin("tg_getitem");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? tensor_getitem(x, idx, n) : NULL);
}

static tg_tensor *multi(const char *op, const tg_tensor *const *ts, size_t n, int axis, bool stack) {
  tensor_ctx_begin(op);
  if (!ts || n == 0) return tensor_ctx_end(tensor_err("needs at least one tensor"));
  if (n > 4096) return tensor_ctx_end(tensor_err("too many tensors (%zu)", n));
  UOp **xs = tg_malloc(n * sizeof *xs);
  bool ok = true;
  for (size_t i = 0; i < n && ok; i++) ok = (xs[i] = tensor_in(ts[i], (int)i + 1)) != NULL;
  UOp *r = ok ? (stack ? tensor_stack(xs, (int)n, axis) : tensor_cat(xs, (int)n, axis)) : NULL;
  tg_free(xs);
  return tensor_ctx_end(r);
}

tg_tensor *tg_cat(const tg_tensor *const *ts, size_t n, int axis) { return multi("tg_cat", ts, n, axis, false); }
tg_tensor *tg_stack(const tg_tensor *const *ts, size_t n, int axis) { return multi("tg_stack", ts, n, axis, true); }

tg_tensor *tg_repeat(const tg_tensor *t, const int64_t *repeats, size_t n) {
  tensor_ctx_begin("tg_repeat");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x && int_args(repeats, n, "repeats") ? tensor_repeat(x, repeats, (int)n) : NULL);
}

int tg_split(const tg_tensor *t, int64_t size, int axis, tg_tensor **out, size_t max_out) {
  tensor_ctx_begin("tg_split");
  UOp *x = tensor_in(t, 1);
  int d, count = -1;
  if (!x || !tensor_resolve_dim(x, axis, false, &d)) goto done;
  if (size <= 0) { tensor_err("split size must be positive, got %lld", (long long)size); goto done; }
  if (t->shape.ndim == 0) { tensor_err("cannot split a 0-d tensor"); goto done; }
  int64_t dim_sz = t->shape.d[d];
  int64_t pieces = dim_sz == 0 ? 1 : (dim_sz + size - 1) / size;
  if (!out || (size_t)pieces > max_out) { tensor_err("%lld pieces do not fit in out[%zu]", (long long)pieces, max_out); goto done; }
  for (int64_t i = 0; i < pieces; i++) {
    int64_t b[2 * TG_MAX_DIMS];
    for (int k = 0; k < t->shape.ndim; k++) b[2 * k] = 0, b[2 * k + 1] = t->shape.d[k];
    b[2 * d] = i * size, b[2 * d + 1] = TG_MIN(dim_sz, (i + 1) * size);
    /* a new handle per piece: the nested begin/end only wraps, the outer context stays open */
    tensor_ctx_begin("tg_split");
    out[i] = tensor_ctx_end(tensor_shrink(x, b, t->shape.ndim));
    if (!out[i]) {
      for (int64_t k = 0; k < i; k++) tg_release(out[k]), out[k] = NULL;
      goto done;
    }
  }
  count = (int)pieces;
done:
  tensor_ctx_end_void();
  return count;
}

int tg_split_sizes(const tg_tensor *t, const int64_t *sizes, size_t n, int axis, tg_tensor **out, size_t max_out) {
  tensor_ctx_begin("tg_split_sizes");
  UOp *x = tensor_in(t, 1);
  int d, count = -1;
  if (!x || !tensor_resolve_dim(x, axis, false, &d)) goto done;
  if (t->shape.ndim == 0) { tensor_err("cannot split a 0-d tensor"); goto done; }
  if (!sizes || n == 0 || n > (size_t)INT32_MAX) { tensor_err("sizes are missing"); goto done; }
  int64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    if (sizes[i] < 0) { tensor_err("negative split size %lld", (long long)sizes[i]); goto done; }
    total += sizes[i];
  }
  if (total != t->shape.d[d]) {
    tensor_err("expect sizes to sum exactly to %lld, but got %lld", (long long)t->shape.d[d], (long long)total);
    goto done;
  }
  if (!out || n > max_out) { tensor_err("%zu pieces do not fit in out[%zu]", n, max_out); goto done; }
  int64_t at = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t b[2 * TG_MAX_DIMS];
    for (int k = 0; k < t->shape.ndim; k++) b[2 * k] = 0, b[2 * k + 1] = t->shape.d[k];
    b[2 * d] = at, b[2 * d + 1] = at + sizes[i];
    at += sizes[i];
    tensor_ctx_begin("tg_split_sizes");
    out[i] = tensor_ctx_end(tensor_shrink(x, b, t->shape.ndim));
    if (!out[i]) {
      for (size_t k = 0; k < i; k++) tg_release(out[k]), out[k] = NULL;
      goto done;
    }
  }
  count = (int)n;
done:
  tensor_ctx_end_void();
  return count;
}

int tg_chunk(const tg_tensor *t, int chunks, int axis, tg_tensor **out, size_t max_out) {
  if (!t) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_chunk: argument 1 is NULL");
    return -1;
  }
  if (chunks <= 0) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_chunk: expect chunks to be greater than 0, got: %d", chunks);
    return -1;
  }
  int nd = t->shape.ndim, d = axis < 0 ? axis + nd : axis;
  if (nd == 0 || d < 0 || d >= nd) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_chunk: dim=%d out of range for %d dims", axis, nd);
    return -1;
  }
  int64_t sz = t->shape.d[d];
  if (sz == 0) {
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: tg_chunk: chunking an empty axis not supported yet");
    return -1;
  }
  return tg_split(t, (sz + chunks - 1) / chunks, axis, out, max_out);
}
