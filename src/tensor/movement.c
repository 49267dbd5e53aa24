/* movement.c — the movement part of the Tensor API (reshape, permute, pad, shrink, getitem, cat, split, pool ...):
 * each call checks its C arguments (NULL arrays, too many dims), then wraps a builder of uop/mixin_movement.c or
 * uop/mixin_index.c in a build context. */
#include "tensor/tensor.h"

#include <math.h>

/* ------------------------------------------------------------------------------------------------ public API */

/* A C array argument of n entries: present when n > 0, and at most TG_MAX_DIMS (the builders size their locals so). */
static bool int_args(const void *p, size_t n, const char *what) {
  if (n && !p) return mix_err("%s is NULL", what), false;
  if (n > TG_MAX_DIMS) return mix_err("%zu %s, at most %d supported", n, what, TG_MAX_DIMS), false;
  return true;
}

/* The most common reshape needs no build context: a concrete tensor to sizes that are all given (no -1), none
 * negative, with its element count. The node mix_reshape would make (RESHAPE, or the input itself for its own
 * shape) and its handle are made directly; NULL: not this case, the general path decides (and reports errors). */
static tg_tensor *reshape_direct(const tg_tensor *t, const int64_t *shape, size_t ndim) {
  if (!t || t->symbolic || ndim > TG_MAX_DIMS || (ndim && !shape)) return NULL;
  Shape to = {(int)ndim, {0}};
  for (size_t i = 0; i < ndim; i++) {
    if (shape[i] < 0) return NULL;
    to.d[i] = shape[i];
  }
  if (shape_numel(&to) != shape_numel(&t->shape)) return NULL;
  UOpScope s = uop_scope_begin();
  UOp *u = shape_eq(&to, &t->shape) ? t->uop : mix_mop(t->uop, TG_OP_RESHAPE, to.d, NULL, to.ndim);
  tg_tensor *r = u ? tensor_handle_known(u, &to, t->device) : NULL;
  uop_scope_end(s);
  return r;
}

tg_tensor *tg_reshape(const tg_tensor *t, const int64_t *shape, size_t ndim) {
  tg_tensor *r = reshape_direct(t, shape, ndim);
  if (r) return r;
  mix_ctx_begin("tg_reshape");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x && int_args(shape, ndim, "sizes") ? mix_reshape(x, shape, (int)ndim) : NULL);
}

tg_tensor *tg_permute(const tg_tensor *t, const int *order, size_t ndim) {
  mix_ctx_begin("tg_permute");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x && int_args(order, ndim, "axes") ? mix_permute(x, order, (int)ndim) : NULL);
}

tg_tensor *tg_transpose(const tg_tensor *t, int dim0, int dim1) {
  mix_ctx_begin("tg_transpose");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? mix_transpose(x, dim0, dim1) : NULL);
}

tg_tensor *tg_expand(const tg_tensor *t, const int64_t *shape, size_t ndim) {
  mix_ctx_begin("tg_expand");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x && int_args(shape, ndim, "sizes") ? mix_expand(x, shape, (int)ndim) : NULL);
}

/* tinygrad pad(padding, mode, value): (before, after) per axis, negative entries crop; constant, reflect, replicate
 * and circular modes are the builder's (mix_pad_mode). */
tg_tensor *tg_pad(const tg_tensor *t, const int64_t *pads, size_t ndim, tg_pad_mode mode, double value) {
  mix_ctx_begin("tg_pad");
  UOp *x = tensor_in(t, 1), *r = NULL;
  if (x && int_args(pads, ndim, "pad pairs")) {
    if ((unsigned)mode > TG_PAD_CIRCULAR) r = mix_err("mode=%d is not supported", (int)mode);
    else if ((int)ndim != t->shape.ndim) r = mix_err("padding length is improper, %zu pairs for %s", ndim, mix_fmt_shape(&t->shape));
    else {
      /* an integral fill of an int or bool tensor is an int constant (tinygrad's Python int): the dtype stays */
      bool int_fill = (dt_is_int(x->dtype) || x->dtype == DT_BOOL) && value == floor(value) && fabs(value) < 9.2e18;
      r = mix_pad_mode(x, pads, (int)ndim, mode, int_fill ? const_int((int64_t)value) : const_float(value));
    }
  }
  return tensor_ctx_end(r);
}

tg_tensor *tg_shrink(const tg_tensor *t, const int64_t *bounds, size_t ndim) {
  mix_ctx_begin("tg_shrink");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x && int_args(bounds, ndim, "bound pairs") ? mix_shrink(x, bounds, (int)ndim) : NULL);
}

tg_tensor *tg_flip(const tg_tensor *t, const int *axes, size_t naxes) {
  mix_ctx_begin("tg_flip");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x && int_args(axes, naxes, "axes") ? mix_flip(x, axes, (int)naxes) : NULL);
}

tg_tensor *tg_squeeze(const tg_tensor *t, int axis) {
  mix_ctx_begin("tg_squeeze");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? mix_squeeze(x, axis) : NULL);
}

/* squeeze() with no axis: every size-1 axis, one RESHAPE (tinygrad's squeeze(None)). */
tg_tensor *tg_squeeze_all(const tg_tensor *t) {
  mix_ctx_begin("tg_squeeze_all");
  UOp *x = tensor_in(t, 1);
  if (!x) return tensor_ctx_end(NULL);
  int64_t ns[TG_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < t->shape.ndim; i++)
    if (t->shape.d[i] != 1) ns[k++] = t->shape.d[i];
  return tensor_ctx_end(mix_reshape(x, ns, k));
}

tg_tensor *tg_unsqueeze(const tg_tensor *t, int axis) {
  mix_ctx_begin("tg_unsqueeze");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? mix_unsqueeze(x, axis) : NULL);
}

tg_tensor *tg_flatten(const tg_tensor *t, int start_dim, int end_dim) {
  mix_ctx_begin("tg_flatten");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x ? mix_flatten(x, start_dim, end_dim) : NULL);
}

/* t[idx]: the index tensors become nodes here (seeded like any argument), the rest is tinygrad's _getitem
 * (mix_getitem): views for ints and slices, one-hot masks for tensor indices. */
tg_tensor *tg_getitem(const tg_tensor *t, const tg_index *idx, size_t n) {
  mix_ctx_begin("tg_getitem");
  UOp *x = tensor_in(t, 1);
  if (!x) return tensor_ctx_end(NULL);
  if (n && !idx) return tensor_ctx_end(mix_err("indices are NULL"));
  if (n > TG_MAX_DIMS * 2) return tensor_ctx_end(mix_err("too many indices (%zu)", n));
  /* the index tensors' nodes (a NULL handle stays NULL: the builder names it) */
  UOp *tensors[TG_MAX_DIMS * 2] = {0};
  for (size_t i = 0; i < n; i++)
    if (idx[i].kind == TG_IDX_TENSOR && idx[i].tensor && !(tensors[i] = tensor_in(idx[i].tensor, 2))) return tensor_ctx_end(NULL);
  return tensor_ctx_end(mix_getitem(x, idx, tensors, n));
}

/* cat and stack share the argument handling: n handles, each a node of the same context (errors name argument i+1). */
static tg_tensor *multi(const char *op, const tg_tensor *const *ts, size_t n, int axis, bool stack) {
  mix_ctx_begin(op);
  if (!ts || n == 0) return tensor_ctx_end(mix_err("needs at least one tensor"));
  if (n > 4096) return tensor_ctx_end(mix_err("too many tensors (%zu)", n));
  UOp **xs = tg_malloc(n * sizeof *xs);
  bool ok = true;
  for (size_t i = 0; i < n && ok; i++) ok = (xs[i] = tensor_in(ts[i], (int)i + 1)) != NULL;
  UOp *r = ok ? (stack ? mix_stack(xs, (int)n, axis) : mix_cat(xs, (int)n, axis)) : NULL;
  tg_free(xs);
  return tensor_ctx_end(r);
}

tg_tensor *tg_cat(const tg_tensor *const *ts, size_t n, int axis) { return multi("tg_cat", ts, n, axis, false); }
tg_tensor *tg_stack(const tg_tensor *const *ts, size_t n, int axis) { return multi("tg_stack", ts, n, axis, true); }

tg_tensor *tg_repeat(const tg_tensor *t, const int64_t *repeats, size_t n) {
  mix_ctx_begin("tg_repeat");
  UOp *x = tensor_in(t, 1);
  return tensor_ctx_end(x && int_args(repeats, n, "repeats") ? mix_repeat(x, repeats, (int)n) : NULL);
}

/* The pieces of t along axis d with the given sizes (which tile the axis), each a SHRINK view with a handle of its
 * own: a nested begin/end only wraps, the caller's context stays open. On an error the pieces made so far are
 * released, so out[] is all or nothing. Returns the count, or -1. */
static int split_pieces(const tg_tensor *t, UOp *x, int d, const int64_t *sizes, size_t n, const char *op,
                        tg_tensor **out) {
  int64_t at = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t b[2 * TG_MAX_DIMS];
    for (int k = 0; k < t->shape.ndim; k++) b[2 * k] = 0, b[2 * k + 1] = t->shape.d[k];
    b[2 * d] = at, b[2 * d + 1] = at + sizes[i];
    at += sizes[i];
    mix_ctx_begin(op);
    out[i] = tensor_ctx_end(mix_shrink(x, b, t->shape.ndim));
    if (!out[i]) {
      for (size_t k = 0; k < i; k++) tg_release(out[k]), out[k] = NULL;
      return -1;
    }
  }
  return (int)n;
}

/* tinygrad split(int): pieces of `size` along axis, the last one shorter (an empty axis gives one empty piece). */
int tg_split(const tg_tensor *t, int64_t size, int axis, tg_tensor **out, size_t max_out) {
  mix_ctx_begin("tg_split");
  UOp *x = tensor_in(t, 1);
  int d, count = -1;
  if (!x || !mix_resolve_dim(x, axis, false, &d)) goto done;
  if (size <= 0) { mix_err("split size must be positive, got %lld", (long long)size); goto done; }
  if (t->shape.ndim == 0) { mix_err("cannot split a 0-d tensor"); goto done; }
  int64_t dim_sz = t->shape.d[d];
  int64_t pieces = dim_sz == 0 ? 1 : (dim_sz + size - 1) / size;
  if (!out || (size_t)pieces > max_out) { mix_err("%lld pieces do not fit in out[%zu]", (long long)pieces, max_out); goto done; }
  int64_t *sizes = tg_malloc((size_t)pieces * sizeof *sizes);
  for (int64_t i = 0; i < pieces; i++) sizes[i] = TG_MIN(dim_sz, (i + 1) * size) - i * size;
  count = split_pieces(t, x, d, sizes, (size_t)pieces, "tg_split", out);
  tg_free(sizes);
done:
  mix_ctx_end();
  return count;
}

/* tinygrad split(list): explicit piece sizes, which must sum to the axis size exactly. */
int tg_split_sizes(const tg_tensor *t, const int64_t *sizes, size_t n, int axis, tg_tensor **out, size_t max_out) {
  mix_ctx_begin("tg_split_sizes");
  UOp *x = tensor_in(t, 1);
  int d, count = -1;
  if (!x || !mix_resolve_dim(x, axis, false, &d)) goto done;
  if (t->shape.ndim == 0) { mix_err("cannot split a 0-d tensor"); goto done; }
  if (!sizes || n == 0 || n > (size_t)INT32_MAX) { mix_err("sizes are missing"); goto done; }
  int64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    if (sizes[i] < 0) { mix_err("negative split size %lld", (long long)sizes[i]); goto done; }
    total += sizes[i];
  }
  if (total != t->shape.d[d]) {
    mix_err("expect sizes to sum exactly to %lld, but got %lld", (long long)t->shape.d[d], (long long)total);
    goto done;
  }
  if (!out || n > max_out) { mix_err("%zu pieces do not fit in out[%zu]", n, max_out); goto done; }
  count = split_pieces(t, x, d, sizes, n, "tg_split_sizes", out);
done:
  mix_ctx_end();
  return count;
}

/* tinygrad chunk: split into pieces of ceil(size / chunks), so fewer than `chunks` pieces can come back (as torch). */
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

/* tinygrad _pool: the sliding windows as a view with the kernel axes appended (what conv2d and the pools reduce
 * over); stride and dilation default to 1 per kernel axis. */
tg_tensor *tg_pool(const tg_tensor *t, const int64_t *kernel, size_t nk, const int64_t *stride, const int64_t *dilation) {
  mix_ctx_begin("tg_pool");
  UOp *x = tensor_in(t, 1), *r = NULL;
  int64_t ones[TG_MAX_DIMS];
  for (int i = 0; i < TG_MAX_DIMS; i++) ones[i] = 1;
  if (x) {
    if (!kernel || nk == 0 || nk > TG_MAX_DIMS) r = mix_err("kernel needs 1 to %d sizes, got %zu", TG_MAX_DIMS, nk);
    else r = mix_pool(x, kernel, (int)nk, stride ? stride : ones, dilation ? dilation : ones);
  }
  return tensor_ctx_end(r);
}
