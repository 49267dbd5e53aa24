/* symshape.c — symbolic sizes in the Tensor API: tg_sint arguments (an int plus an optional Variable expression)
 * turned into size UOps, storage for a symbolic shape (a buffer sized for the maximum, viewed shrunk to the
 * expression), and the public calls around the builders of uop/mixin_symshape.c. */
#include "engine/engine.h"
#include "tensor/tensor.h"

#include <string.h>

UOp *tensor_empty_sym(const SymShape *s, const DType *dt) {
  if (dt_is_weak(dt) || dt == DT_VOID) return mix_err("cannot create storage for weak dtype %s", dt->name);
  UOp *buf = engine_new_buffer(tg_default_device(), dt, shape_numel(&s->max));
  UOp *x = buf ? mix_reshape(buf, s->max.d, s->max.ndim) : NULL;
  if (!x || !shape_sym_is_symbolic(s)) return x;
  UOp *b[2 * TG_MAX_DIMS];
  for (int i = 0; i < s->max.ndim; i++) b[2 * i] = uop_const_int(DT_WEAKINT, 0), b[2 * i + 1] = shape_sym_dim(s, i);
  return mix_shrink_sym(x, b, s->max.ndim);
}

/* ---- public ---- */

/* A tg_sint is n + v (v an int-valued handle, NULL for a plain int): its size UOp, checked to be a sint expression. */
static UOp *sint_arg(tg_sint v, int argi) {
  UOp *c = uop_const_int(DT_WEAKINT, v.n);
  if (!v.v) return c;
  UOp *e = tensor_in(v.v, argi);
  if (!e) return NULL;
  if (!dt_is_int(e->dtype)) return mix_err("argument %d: a size must be an int expression, got dtype %s", argi, e->dtype->name);
  return mix_sint(v.n ? uop_add(e, uop_const_like_int(e, v.n)) : e);
}

bool tensor_sym_shape_arg(const tg_sint *shape, size_t ndim, bool keep_ok, SymShape *out) {
  memset(out, 0, sizeof *out);
  if (ndim > TG_MAX_DIMS) return mix_err("%zu dims, at most %d supported", ndim, TG_MAX_DIMS), false;
  if (ndim && !shape) return mix_err("shape is NULL with ndim %zu", ndim), false;
  out->max.ndim = (int)ndim;
  for (size_t i = 0; i < ndim; i++) {
    UOp *e = sint_arg(shape[i], 2);
    if (!e) return false;
    if (!shape_sym_set_dim(out, (int)i, e)) return mix_err("invalid size on axis %zu", i), false;
    if (!out->sym[i] && out->max.d[i] < (keep_ok ? -1 : 0)) return mix_err("negative size on axis %zu", i), false;
  }
  return true;
}

/* The (start, end) / (before, after) pairs of tg_shrink_sym and tg_pad_sym: 2*ndim sizes as size UOps, one builder
 * for both (a NULL or too long array is an error naming `what`). */
static tg_tensor *sym_pairs(const char *op, const tg_tensor *t, const tg_sint *pairs, size_t ndim, const char *what,
                            UOp *(*build)(UOp *, UOp *const *, int)) {
  mix_ctx_begin(op);
  UOp *x = tensor_in(t, 1), *v[2 * TG_MAX_DIMS], *r = NULL;
  bool ok = x != NULL;
  if (ok && ndim > TG_MAX_DIMS) ok = mix_err("%zu dims, at most %d supported", ndim, TG_MAX_DIMS) != NULL;
  if (ok && ndim && !pairs) ok = mix_err("%s is NULL with ndim %zu", what, ndim) != NULL;
  for (size_t i = 0; ok && i < 2 * ndim; i++) ok = (v[i] = sint_arg(pairs[i], 2)) != NULL;
  if (ok) r = build(x, v, (int)ndim);
  return tensor_ctx_end(r);
}

tg_tensor *tg_shrink_sym(const tg_tensor *t, const tg_sint *bounds, size_t ndim) {
  return sym_pairs("tg_shrink_sym", t, bounds, ndim, "bounds", mix_shrink_sym);
}

tg_tensor *tg_pad_sym(const tg_tensor *t, const tg_sint *pads, size_t ndim) {
  return sym_pairs("tg_pad_sym", t, pads, ndim, "pads", mix_pad_sym);
}

tg_tensor *tg_reshape_sym(const tg_tensor *t, const tg_sint *shape, size_t ndim) {
  mix_ctx_begin("tg_reshape_sym");
  UOp *x = tensor_in(t, 1);
  SymShape to;
  return tensor_ctx_end(x && tensor_sym_shape_arg(shape, ndim, false, &to) ? mix_reshape_sym(x, &to) : NULL);
}

tg_tensor *tg_expand_sym(const tg_tensor *t, const tg_sint *shape, size_t ndim) {
  mix_ctx_begin("tg_expand_sym");
  UOp *x = tensor_in(t, 1);
  SymShape to, s;
  if (!x || !tensor_sym_shape_arg(shape, ndim, true, &to) || !mix_shape_sym(x, &s)) return tensor_ctx_end(NULL);
  /* -1 keeps a size (right-aligned, as tg_expand) */
  for (int i = 0; i < to.max.ndim; i++) {
    int k = i - (to.max.ndim - s.max.ndim);
    if (!to.sym[i] && to.max.d[i] == -1) {
      if (k < 0) return tensor_ctx_end(mix_err("-1 on a new axis %d", i));
      to.max.d[i] = s.max.d[k], to.sym[i] = s.sym[k];
    }
  }
  return tensor_ctx_end(mix_broadcast_to_sym(x, &to));
}

bool tg_is_symbolic(const tg_tensor *t) { return t && t->symbolic; }

/* tinygrad's t.shape[i] for a symbolic axis: the size as a 0-d int handle (the expression of bound Variables), so it
 * can feed further shapes and arithmetic; a concrete axis gives a weak int constant. */
tg_tensor *tg_dim(const tg_tensor *t, int axis) {
  mix_ctx_begin("tg_dim");
  UOp *x = tensor_in(t, 1), *r = NULL;
  int d;
  if (x && mix_resolve_dim(x, axis, false, &d)) {
    if (t->shape.ndim == 0) r = mix_err("a 0-d tensor has no axis %d", axis);
    else r = t->sym[d] ? t->sym[d] : uop_const_int(DT_WEAKINT, t->shape.d[d]);
  }
  return tensor_ctx_end(r);
}
