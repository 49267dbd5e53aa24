/* mixin_symshape.c — symbolic sizes in the graph builders (tinygrad's sint): a size is an int or a weak-int
 * expression of bound Variables, e.g. the length start_pos+1 of a KV-cache slice. A tensor with such a size is a view
 * of storage sized for the maximum; its kernels loop to the expression, whose Variables reach them as scalar
 * arguments.
 *
 * The builders here take and give SymShape / size UOps. Validity is checked at the bound values (what this realize
 * computes) on top of the shape rules' value-free checks (shape.c). The public calls (tg_shrink_sym, tg_reshape_sym,
 * tg_expand_sym, tg_empty_sym's storage, tg_dim, tg_is_symbolic) are in src/tensor/symshape.c. */
#include "uop/mixin.h"
#include "uop/symbolic.h"

#include <stdio.h>
#include <stdlib.h>

/* leaves of a size expression: CONST ints and bound Variables (the value side of a bind is not walked) */
static bool sint_ok(UOp *e, int depth) {
  if (depth > 64) return false;
  if (e->op == TG_OP_CONST) return e->arg.c.kind == CK_INT;
  if (e->op == TG_OP_AFTER) return uop_unbind(e, NULL, NULL);
  switch (e->op) {
  case TG_OP_ADD: case TG_OP_MUL: case TG_OP_FLOORDIV: case TG_OP_FLOORMOD: case TG_OP_CDIV: case TG_OP_CMOD: case TG_OP_MAX: case TG_OP_NEG:
    for (uint32_t i = 0; i < e->nsrc; i++)
      if (!sint_ok(e->src[i], depth + 1)) return false;
    return dt_is_int(e->dtype);
  default: return false;
  }
}

/* The value of a sum or product of int constants (what a concrete shape's size arithmetic builds: pad and shrink
 * lengths), without the rewrite engine; false for anything else, or on overflow. */
static bool const_fold(const UOp *e, int depth, int64_t *out) {
  if (e->op == TG_OP_CONST) {
    *out = e->arg.c.i;
    return e->arg.c.kind == CK_INT;
  }
  if ((e->op != TG_OP_ADD && e->op != TG_OP_MUL) || e->nsrc != 2 || depth > 8) return false;
  int64_t a, b;
  if (!const_fold(e->src[0], depth + 1, &a) || !const_fold(e->src[1], depth + 1, &b)) return false;
  return e->op == TG_OP_ADD ? !__builtin_add_overflow(a, b, out) : !__builtin_mul_overflow(a, b, out);
}

/* A size expression checked (leaves CONST ints and bound Variables, int ops only) and simplified, so equal sizes are
 * one node and shape equality stays a pointer compare. */
UOp *mix_sint(UOp *e) {
  if (!e) return NULL;
  if (!sint_ok(e, 0))
    return mix_err("a symbolic size must be an int expression of bound Variables (tg_bind), got %s %s",
                      uop_op_name(uop_op(e)), e->dtype->name);
  if (e->op == TG_OP_CONST) return e->dtype == DT_WEAKINT ? e : uop_const_int(DT_WEAKINT, e->arg.c.i);
  int64_t v;
  UOp *s = const_fold(e, 0, &v) ? uop_const_int(DT_WEAKINT, v) : uop_simplify(e);
  if (uop_vmin(s) < 0) {
    char *r = uop_render(s);
    mix_err("size %s can be negative (minimum %lld)", r, (long long)uop_vmin(s));
    free(r);
    return NULL;
  }
  return s;
}

/* The value at the current binds: each bound Variable replaced by its CONST, then folded. The builders check
 * bounds with it (what this realize computes), on top of the shape rules' value-free checks. */
bool mix_sint_value(UOp *e, int64_t *out) {
  if (e->op == TG_OP_CONST) {
    *out = e->arg.c.i;
    return e->arg.c.kind == CK_INT;
  }
  UOpVec topo = {0}, from = {0}, to = {0};
  uop_toposort(e, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len; i++) {
    int64_t v;
    if (topo.data[i]->op == TG_OP_AFTER && uop_unbind(topo.data[i], NULL, &v)) {
      tg_vec_push(&from, topo.data[i]);
      tg_vec_push(&to, uop_const_int(topo.data[i]->dtype, v));
    }
  }
  UOp *r = uop_simplify(uop_substitute(e, from.data, to.data, from.len));
  tg_vec_free(&topo);
  tg_vec_free(&from);
  tg_vec_free(&to);
  if (r->op != TG_OP_CONST || r->arg.c.kind != CK_INT) return false;
  *out = r->arg.c.i;
  return true;
}

/* A shape for messages (rotating static buffers: two in one message are fine). */
static const char *fmt_sym(const SymShape *s) {
  static char bufs[4][256];
  static int at;
  at = (at + 1) % 4;
  return shape_sym_fmt(s, bufs[at], sizeof bufs[at]);
}

/* The element count of the axes marked in red (all when NULL) as one size expression: the concrete sizes multiplied
 * into one CONST factor of the symbolic product (mean and var divide by it). */
UOp *mix_sym_numel(const SymShape *s, const bool *red) {
  int64_t n = 1;
  UOp *e = NULL;
  for (int i = 0; i < s->max.ndim; i++) {
    if (red && !red[i]) continue;
    if (s->sym[i]) e = e ? uop_mul(e, s->sym[i]) : s->sym[i];
    else n *= s->max.d[i];
  }
  if (!e) return uop_const_int(DT_WEAKINT, n);
  return uop_simplify(n == 1 ? e : uop_mul(e, uop_const_int(DT_WEAKINT, n)));
}

/* A reshape with symbolic sizes: concrete on both sides goes to mix_reshape (with its -1 handling); otherwise the node
 * is built and the shape rule decides (it allows each symbolic size to stay one axis, see uop/shape.c same_numel). */
UOp *mix_reshape_sym(UOp *x, const SymShape *to) {
  SymShape s, r;
  if (!x || !mix_shape_sym(x, &s)) return NULL;
  if (shape_sym_eq(&s, to)) return x;
  if (!shape_sym_is_symbolic(&s) && !shape_sym_is_symbolic(to)) return mix_reshape(x, to->max.d, to->max.ndim);
  UOp *src[2] = {x, shape_sym_to_uop(to)};
  UOp *y = uop_new(TG_OP_RESHAPE, NULL, src, 2, arg_none());
  if (!mix_shape_sym(y, &r)) /* the rule's message names both shapes */
    return mix_err("size mismatch, can't reshape %s -> %s", fmt_sym(&s), fmt_sym(to));
  return y;
}

/* A movement node whose shape arguments are SymShapes (sizes that are expressions stay expressions in the STACK). */
static UOp *mop_sym(UOp *x, TgOp op, const SymShape *a, const SymShape *b) {
  UOp *src[3] = {x, shape_sym_to_uop(a), b ? shape_sym_to_uop(b) : NULL};
  return uop_new(op, NULL, src, b ? 3 : 2, arg_none());
}

/* tinygrad _broadcast_to: reshape away the stretched size-1 axes, EXPAND prepends, permute back */
UOp *mix_broadcast_to_sym(UOp *x, const SymShape *ns) {
  SymShape s;
  if (!x || !mix_shape_sym(x, &s)) return NULL;
  if (shape_sym_eq(&s, ns)) return x;
  int nd = s.max.ndim;
  if (nd > ns->max.ndim)
    return mix_err("cannot broadcast tensor to fewer dimensions. shape=%s to %s", fmt_sym(&s), fmt_sym(ns));
  int n_left = ns->max.ndim - nd;
  int expand_at[TG_MAX_DIMS], kept[TG_MAX_DIMS], ne = 0, nk = 0;
  for (int i = 0; i < nd; i++) {
    bool one = !s.sym[i] && s.max.d[i] == 1, target_one = !ns->sym[n_left + i] && ns->max.d[n_left + i] == 1;
    if (!one && !shape_sym_dim_eq(&s, i, ns, n_left + i))
      return mix_err("cannot broadcast %s to %s", fmt_sym(&s), fmt_sym(ns));
    if (one && !target_one) expand_at[ne++] = i;
    else kept[nk++] = i;
  }
  SymShape sq, ex;
  memset(&sq, 0, sizeof sq), memset(&ex, 0, sizeof ex);
  sq.max.ndim = nk, ex.max.ndim = n_left + ne;
  for (int i = 0; i < nk; i++) sq.max.d[i] = s.max.d[kept[i]], sq.sym[i] = s.sym[kept[i]];
  for (int i = 0; i < n_left; i++) ex.max.d[i] = ns->max.d[i], ex.sym[i] = ns->sym[i];
  for (int i = 0; i < ne; i++) ex.max.d[n_left + i] = ns->max.d[n_left + expand_at[i]], ex.sym[n_left + i] = ns->sym[n_left + expand_at[i]];
  UOp *r = mix_reshape_sym(x, &sq);
  if (r && ex.max.ndim) r = mop_sym(r, TG_OP_EXPAND, &ex, NULL);
  int perm[TG_MAX_DIMS];
  for (int i = 0; i < n_left; i++) perm[i] = i;
  for (int i = 0; i < nd; i++) {
    int pos = -1;
    for (int k = 0; k < ne; k++)
      if (expand_at[k] == i) pos = k;
    if (pos < 0)
      for (int k = 0; k < nk; k++)
        if (kept[k] == i) pos = ne + k;
    perm[n_left + i] = n_left + pos;
  }
  return mix_permute(r, perm, ns->max.ndim);
}

/* SHRINK by (start, end) per axis, any of them an expression: checked at the bound values (0 <= start <= end <= size),
 * stored as (offsets, sizes) with the size end - start simplified; the full range on every axis is no node. */
UOp *mix_shrink_sym(UOp *x, UOp *const *bounds, int n) {
  SymShape s, off, sz;
  if (!x || !mix_shape_sym(x, &s)) return NULL;
  if (n != s.max.ndim) return mix_err("ndim=%d != len(bounds)=%d", s.max.ndim, n);
  memset(&off, 0, sizeof off), memset(&sz, 0, sizeof sz);
  off.max.ndim = sz.max.ndim = n;
  bool same = true;
  for (int i = 0; i < n; i++) {
    UOp *a = mix_sint(bounds[2 * i]), *b = mix_sint(bounds[2 * i + 1]);
    if (!a || !b) return NULL;
    UOp *size = shape_sym_dim(&s, i);
    int64_t va, vb, vs;
    if (!mix_sint_value(a, &va) || !mix_sint_value(b, &vb) || !mix_sint_value(size, &vs))
      return mix_err("shrink on axis %d: a size without a value", i);
    if (va < 0 || vb < va || vb > vs) {
      char *ra = uop_render(a), *rb = uop_render(b);
      mix_err("invalid shrink (%s, %s) = (%lld, %lld) on axis %d of %s", ra, rb, (long long)va, (long long)vb, i, fmt_sym(&s));
      free(ra), free(rb);
      return NULL;
    }
    UOp *len = a->op == TG_OP_CONST && a->arg.c.i == 0 ? b : mix_sint(uop_sub(b, a));
    if (!shape_sym_set_dim(&off, i, a) || !len || !shape_sym_set_dim(&sz, i, len)) return mix_err("bad shrink bounds on axis %d", i);
    same = same && a->op == TG_OP_CONST && a->arg.c.i == 0 && shape_sym_dim_eq(&sz, i, &s, i);
  }
  return same ? x : mop_sym(x, TG_OP_SHRINK, &off, &sz);
}

/* PAD by (before, after) per axis, expressions allowed, non-negative at the bound values; the new size is
 * size + before + after; no padding is no node. */
UOp *mix_pad_sym(UOp *x, UOp *const *pads, int n) {
  SymShape s, beg, sz;
  if (!x || !mix_shape_sym(x, &s)) return NULL;
  if (n != s.max.ndim) return mix_err("ndim=%d != len(pads)=%d", s.max.ndim, n);
  memset(&beg, 0, sizeof beg), memset(&sz, 0, sizeof sz);
  beg.max.ndim = sz.max.ndim = n;
  bool same = true;
  for (int i = 0; i < n; i++) {
    UOp *lo = mix_sint(pads[2 * i]), *hi = mix_sint(pads[2 * i + 1]);
    if (!lo || !hi) return NULL;
    int64_t vlo, vhi;
    if (!mix_sint_value(lo, &vlo) || !mix_sint_value(hi, &vhi)) return mix_err("pad on axis %d: a size without a value", i);
    if (vlo < 0 || vhi < 0) return mix_err("negative pad (%lld, %lld) on axis %d", (long long)vlo, (long long)vhi, i);
    UOp *len = mix_sint(uop_add(uop_add(shape_sym_dim(&s, i), lo), hi));
    if (!len || !shape_sym_set_dim(&beg, i, lo) || !shape_sym_set_dim(&sz, i, len)) return mix_err("bad pad on axis %d", i);
    same = same && lo->op == TG_OP_CONST && lo->arg.c.i == 0 && hi->op == TG_OP_CONST && hi->arg.c.i == 0;
  }
  return same ? x : mop_sym(x, TG_OP_PAD, &beg, &sz);
}
