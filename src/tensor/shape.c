/* shape.c — shape inference for tensor-graph UOps, following tinygrad's UOp._shape case by case (see shape.h).
 *
 * uop_shape walks the graph in toposort order once, so a deep tensor graph costs its size, not its depth squared. */
#include "tensor/shape.h"

#include <stdio.h>

int64_t shape_numel(const Shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->ndim; i++) n *= s->d[i];
  return n;
}

bool shape_eq(const Shape *a, const Shape *b) {
  if (a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->d[i] != b->d[i]) return false;
  return true;
}

const char *shape_fmt(const Shape *s, char *buf, size_t n) {
  size_t at = 0;
  if (n == 0) return buf;
  buf[0] = 0;
  at += (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < s->ndim && at < n; i++)
    at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? ", " : "", (long long)s->d[i]);
  if (at < n) at += (size_t)snprintf(buf + at, n - at, s->ndim == 1 ? ",)" : ")");
  return buf;
}

bool shape_broadcast(const Shape *a, const Shape *b, Shape *out) {
  int nd = TG_MAX(a->ndim, b->ndim);
  Shape r;
  r.ndim = nd;
  for (int i = 0; i < nd; i++) {
    int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
    int64_t sa = ia >= 0 ? a->d[ia] : 1, sb = ib >= 0 ? b->d[ib] : 1;
    if (sa != 1 && sb != 1 && sa != sb) return false;
    r.d[i] = sa != 1 ? sa : sb;
  }
  *out = r;
  return true;
}

bool uop_as_shape(const UOp *arg, Shape *out) {
  out->ndim = 0;
  if (arg->op == TG_OP_CONST) {
    if (arg->arg.c.kind != CK_INT) return false;
    out->ndim = 1;
    out->d[0] = arg->arg.c.i;
    return true;
  }
  if (arg->op != TG_OP_STACK || arg->nsrc > TG_MAX_DIMS) return false;
  for (uint32_t i = 0; i < arg->nsrc; i++) {
    if (arg->src[i]->op != TG_OP_CONST || arg->src[i]->arg.c.kind != CK_INT) return false;
    out->d[i] = arg->src[i]->arg.c.i;
  }
  out->ndim = (int)arg->nsrc;
  return true;
}

UOp *shape_to_uop(const int64_t *dims, int ndim) {
  if (ndim == 0) return uop_new(TG_OP_STACK, DT_VOID, NULL, 0, arg_none());
  if (ndim == 1) return uop_const_int(DT_WEAKINT, dims[0]);
  UOp *src[TG_MAX_DIMS];
  for (int i = 0; i < ndim; i++) src[i] = uop_const_int(DT_WEAKINT, dims[i]);
  return uop_new(TG_OP_STACK, DT_WEAKINT, src, (size_t)ndim, arg_none());
}

bool uop_marg_pair(const UOp *mop, Shape *first, Shape *second) {
  switch (uop_op(mop)) {
  case TG_OP_RESHAPE: case TG_OP_EXPAND:
    if (mop->nsrc < 2) return false;
    if (second) second->ndim = 0;
    return uop_as_shape(mop->src[1], first);
  case TG_OP_PAD: case TG_OP_SHRINK:
    return mop->nsrc >= 3 && uop_as_shape(mop->src[1], first) && uop_as_shape(mop->src[2], second) &&
           first->ndim == second->ndim;
  case TG_OP_PERMUTE: case TG_OP_FLIP:
    if (mop->arg.len > TG_MAX_DIMS) return false;
    first->ndim = (int)mop->arg.len;
    for (uint32_t i = 0; i < mop->arg.len; i++) first->d[i] = mop->arg.ints[i];
    if (second) second->ndim = 0;
    return true;
  default: return false;
  }
}

/* ---- the per-op rule: `get` gives a source's already computed shape (NULL when it has none) ---- */

typedef struct ShapeSlot { ShapeResult res; Shape s; } ShapeSlot;

static ShapeResult fail(const UOp *u, const char *why) {
  tg_set_error(TG_ERR_INVALID_ARGUMENT, "shape of %s: %s", uop_op_name(uop_op(u)), why);
  return SHAPE_ERROR;
}

static ShapeResult src_shape(const UOpMap *m, const UOp *s, Shape *out) {
  void **v = uopmap_get(m, s);
  TG_ASSERT(v, "source visited before its user");
  ShapeSlot *slot = *v;
  if (slot->res == SHAPE_OK) *out = slot->s;
  return slot->res;
}

static ShapeResult movement_shape(const UOp *u, const Shape *ps, Shape *out) {
  Shape a, b;
  char b1[160], b2[160];
  TgOp op = uop_op(u);
  if (op == TG_OP_REDUCE) {
    if (u->arg.kind != ARG_REDUCE || u->arg.red.naxes < 0 || u->arg.red.naxes > ps->ndim) return fail(u, "invalid axis count");
    out->ndim = ps->ndim - u->arg.red.naxes;
    for (int i = 0; i < out->ndim; i++) out->d[i] = ps->d[i + u->arg.red.naxes];
    return SHAPE_OK;
  }
  if (!uop_marg_pair(u, &a, &b)) return fail(u, "shape argument is not a constant shape (symbolic shapes not supported yet)");
  switch (op) {
  case TG_OP_RESHAPE:
    for (int i = 0; i < a.ndim; i++)
      if (a.d[i] < 0) return fail(u, "negative size");
    if (shape_numel(&a) != shape_numel(ps)) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "shape of RESHAPE: bad reshape %s -> %s", shape_fmt(ps, b1, sizeof b1),
                   shape_fmt(&a, b2, sizeof b2));
      return SHAPE_ERROR;
    }
    *out = a;
    return SHAPE_OK;
  case TG_OP_EXPAND:
    if (a.ndim + ps->ndim > TG_MAX_DIMS) return fail(u, "too many dimensions");
    *out = a;
    for (int i = 0; i < ps->ndim; i++) out->d[a.ndim + i] = ps->d[i];
    out->ndim = a.ndim + ps->ndim;
    return SHAPE_OK;
  case TG_OP_PERMUTE: {
    if (a.ndim != ps->ndim) return fail(u, "permutation length differs from ndim");
    bool seen[TG_MAX_DIMS] = {0};
    for (int i = 0; i < a.ndim; i++) {
      if (a.d[i] < 0 || a.d[i] >= a.ndim || seen[a.d[i]]) return fail(u, "invalid permutation");
      seen[a.d[i]] = true;
      out->d[i] = ps->d[a.d[i]];
    }
    out->ndim = a.ndim;
    return SHAPE_OK;
  }
  case TG_OP_PAD: case TG_OP_SHRINK:
    if (a.ndim != ps->ndim) return fail(u, "argument length differs from ndim");
    for (int i = 0; i < a.ndim; i++) {
      bool ok = op == TG_OP_PAD ? (b.d[i] >= 0 && a.d[i] >= 0 && a.d[i] + ps->d[i] <= b.d[i])
                                : (a.d[i] >= 0 && b.d[i] >= 0 && a.d[i] + b.d[i] <= ps->d[i]);
      if (!ok) {
        char b3[160];
        tg_set_error(TG_ERR_INVALID_ARGUMENT, "shape of %s: invalid (offsets %s, sizes %s) for %s", uop_op_name(op),
                     shape_fmt(&a, b1, sizeof b1), shape_fmt(&b, b2, sizeof b2), shape_fmt(ps, b3, sizeof b3));
        return SHAPE_ERROR;
      }
    }
    *out = b;
    return SHAPE_OK;
  case TG_OP_FLIP:
    if (a.ndim != ps->ndim) return fail(u, "flip flags length differs from ndim");
    *out = *ps;
    return SHAPE_OK;
  default: return fail(u, "not a movement op");
  }
}

static ShapeResult one_shape(UOp *u, const UOpMap *m, Shape *out) {
  Shape s0, t;
  TgOp op = uop_op(u);
  out->ndim = 0;
  switch (op) {
  case TG_OP_IF: case TG_OP_BARRIER: case TG_OP_SINK: case TG_OP_REWRITE_ERROR: case TG_OP_ENDIF: case TG_OP_GROUP:
  case TG_OP_LINEAR: case TG_OP_PROGRAM: case TG_OP_SOURCE: case TG_OP_TUPLE: case TG_OP_FUNCTION:
  case TG_OP_CUSTOM_FUNCTION:
    return SHAPE_NONE;
  case TG_OP_CALL: case TG_OP_INS: return u->dtype == DT_VOID ? SHAPE_NONE : SHAPE_OK;
  case TG_OP_NOOP: return u->nsrc ? src_shape(m, u->src[0], out) : SHAPE_NONE;
  case TG_OP_GETTUPLE: {
    UOp *tup = u->src[0]->op == TG_OP_FUNCTION ? u->src[0]->src[0] : u->src[0];
    if (tup->op != TG_OP_TUPLE || u->arg.kind != ARG_INT || u->arg.i < 0 || u->arg.i >= tup->nsrc)
      return fail(u, "GETTUPLE of a non-TUPLE");
    if (tup != u->src[0]) return fail(u, "GETTUPLE through a FUNCTION not supported yet");
    return src_shape(m, tup->src[u->arg.i], out);
  }
  case TG_OP_INDEX: {
    if (src_shape(m, u->src[0], &s0) != SHAPE_OK) return fail(u, "indexed source has no shape");
    int nd = 0;
    for (uint32_t i = 1; i < u->nsrc; i++) {
      if (src_shape(m, u->src[i], &t) != SHAPE_OK) return fail(u, "index has no shape");
      for (int k = 0; k < t.ndim; k++) {
        if (nd >= TG_MAX_DIMS) return fail(u, "too many dimensions");
        out->d[nd++] = t.d[k];
      }
    }
    for (int k = (int)u->nsrc - 1; k < s0.ndim; k++) {
      if (nd >= TG_MAX_DIMS) return fail(u, "too many dimensions");
      out->d[nd++] = s0.d[k];
    }
    out->ndim = nd;
    return SHAPE_OK;
  }
  case TG_OP_STACK:
    if (u->nsrc == 0) return SHAPE_OK;
    if (src_shape(m, u->src[0], &s0) != SHAPE_OK) return fail(u, "element has no shape");
    if (s0.ndim + 1 > TG_MAX_DIMS) return fail(u, "too many dimensions");
    out->ndim = s0.ndim + 1;
    out->d[0] = u->nsrc;
    for (int i = 0; i < s0.ndim; i++) out->d[i + 1] = s0.d[i];
    return SHAPE_OK;
  case TG_OP_CONST: case TG_OP_GETADDR: case TG_OP_RANGE: case TG_OP_SPECIAL: return SHAPE_OK;
  case TG_OP_BINARY: out->ndim = 1; out->d[0] = u->arg.len; return SHAPE_OK;
  case TG_OP_BUFFER: case TG_OP_PARAM:
    if (u->nsrc == 0) return SHAPE_OK;
    if (!uop_as_shape(u->src[0], out)) return fail(u, "size is not constant (symbolic shapes not supported yet)");
    return SHAPE_OK;
  case TG_OP_CUSTOM: case TG_OP_CUSTOMI: {
    if (u->dtype == DT_VOID) return SHAPE_NONE;
    bool any = false;
    for (uint32_t i = 0; i < u->nsrc; i++) {
      ShapeResult r = src_shape(m, u->src[i], &t);
      if (r == SHAPE_ERROR) return r;
      if (r == SHAPE_NONE) continue;
      if (!any) *out = t;
      else if (!shape_broadcast(out, &t, out)) return fail(u, "sources cannot be broadcast");
      any = true;
    }
    return any ? SHAPE_OK : SHAPE_NONE;
  }
  case TG_OP_STAGE: {
    if (src_shape(m, u->src[0], &s0) != SHAPE_OK) return fail(u, "source has no shape");
    int nd = 0;
    for (uint32_t i = 1; i < u->nsrc; i++) out->d[nd++] = (int64_t)uop_vmax(u->src[i]) + 1;
    if (nd + s0.ndim > TG_MAX_DIMS) return fail(u, "too many dimensions");
    for (int i = 0; i < s0.ndim; i++) out->d[nd++] = s0.d[i];
    out->ndim = nd;
    return SHAPE_OK;
  }
  case TG_OP_WMMA: {
    Shape a, b, c;
    if (u->nsrc < 3 || src_shape(m, u->src[0], &a) != SHAPE_OK || src_shape(m, u->src[1], &b) != SHAPE_OK ||
        src_shape(m, u->src[2], &c) != SHAPE_OK || !a.ndim || !b.ndim || !c.ndim)
      return fail(u, "sources need shapes");
    int64_t last = c.d[c.ndim - 1];
    a.ndim--, b.ndim--, c.ndim--;
    if (!shape_broadcast(&a, &b, out) || !shape_broadcast(out, &c, out)) return fail(u, "sources cannot be broadcast");
    out->d[out->ndim++] = last;
    return SHAPE_OK;
  }
  case TG_OP_MSTACK: case TG_OP_MSELECT: case TG_OP_DETACH: case TG_OP_CUSTOM_GRAD: case TG_OP_CONTIGUOUS: case TG_OP_CONTIGUOUS_BACKWARD:
  case TG_OP_AFTER: case TG_OP_LOAD: case TG_OP_COPY: case TG_OP_ALLREDUCE: case TG_OP_STORE: case TG_OP_END:
    return src_shape(m, u->src[0], out);
  case TG_OP_BITCAST: {
    ShapeResult r = src_shape(m, u->src[0], out);
    if (r != SHAPE_OK) return r;
    int osz = dt_itemsize(u->dtype), isz = dt_itemsize(u->src[0]->dtype);
    if (osz != isz && out->ndim > 0) {
      if ((out->d[out->ndim - 1] * isz) % osz) return fail(u, "unsupported size in bitcast");
      out->d[out->ndim - 1] = out->d[out->ndim - 1] * isz / osz;
    }
    return SHAPE_OK;
  }
  case TG_OP_UNSHARD:
    if (u->nsrc == 0) return SHAPE_NONE;
    return fail(u, "multi-device UNSHARD not supported yet");
  case TG_OP_RESHAPE:
    if (u->src[0]->op == TG_OP_NOOP) {
      if (!uop_as_shape(u->src[1], out)) return fail(u, "shape argument is not constant");
      return SHAPE_OK;
    }
    break;
  default: break;
  }
  if (op_has(op, OPP_MOVEMENT) || op == TG_OP_REDUCE) {
    if (u->nsrc < 1) return fail(u, "no source");
    ShapeResult r = src_shape(m, u->src[0], &s0);
    if (r == SHAPE_ERROR) return r;
    if (r == SHAPE_NONE) return fail(u, "movement op on a source without a shape");
    return movement_shape(u, &s0, out);
  }
  if (op_has(op, OPP_UNARY) || op == TG_OP_CAST) {
    if (u->nsrc != 1) return fail(u, "unary ops take one source");
    return src_shape(m, u->src[0], out);
  }
  if (op_has(op, OPP_BINARY | OPP_TERNARY)) {
    for (uint32_t i = 0; i < u->nsrc; i++) {
      ShapeResult r = src_shape(m, u->src[i], &t);
      if (r == SHAPE_ERROR) return r;
      if (r == SHAPE_NONE) return fail(u, "source without a shape");
      if (i == 0) *out = t;
      else if (!shape_broadcast(out, &t, out)) {
        char b1[160], b2[160];
        tg_set_error(TG_ERR_INVALID_ARGUMENT, "shape of %s: shapes %s and %s cannot be broadcast", uop_op_name(op),
                     shape_fmt(out, b1, sizeof b1), shape_fmt(&t, b2, sizeof b2));
        return SHAPE_ERROR;
      }
    }
    return SHAPE_OK;
  }
  return fail(u, "no shape rule for this op");
}

/* ---- walking ---- */

void shape_cache_init(ShapeCache *c) {
  uopmap_init(&c->map);
  c->owned.data = NULL, c->owned.len = c->owned.cap = 0;
}

void shape_cache_free(ShapeCache *c) {
  for (size_t i = 0; i < c->owned.len; i++) tg_free(c->owned.data[i]);
  tg_vec_free(&c->owned);
  uopmap_free(&c->map);
}

/* do not descend into nodes whose shape is known already */
static bool not_cached(const UOp *u, void *ctx) { return uopmap_get(&((ShapeCache *)ctx)->map, u) == NULL; }

ShapeResult uop_shape_cached(UOp *u, ShapeCache *c, Shape *out) {
  void **hit = uopmap_get(&c->map, u);
  if (!hit) {
    UOpVec order = {0};
    uop_toposort(u, not_cached, c, &order);
    for (size_t i = 0; i < order.len; i++) {
      UOp *n = order.data[i];
      if (uopmap_get(&c->map, n)) continue;
      ShapeSlot *slot = tg_malloc(sizeof *slot);
      slot->res = one_shape(n, &c->map, &slot->s);
      tg_vec_push(&c->owned, (void *)slot);
      uopmap_put(&c->map, n, slot);
    }
    tg_vec_free(&order);
    hit = uopmap_get(&c->map, u);
  }
  ShapeSlot *slot = *hit;
  if (slot->res == SHAPE_OK) *out = slot->s;
  else out->ndim = 0;
  return slot->res;
}

void shape_cache_seed(ShapeCache *c, UOp *u, const Shape *s) {
  if (uopmap_get(&c->map, u)) return;
  ShapeSlot *slot = tg_malloc(sizeof *slot);
  slot->res = SHAPE_OK;
  slot->s = *s;
  tg_vec_push(&c->owned, (void *)slot);
  uopmap_put(&c->map, u, slot);
}

ShapeResult uop_shape(UOp *u, Shape *out) {
  ShapeCache c;
  shape_cache_init(&c);
  ShapeResult r = uop_shape_cached(u, &c, out);
  shape_cache_free(&c);
  return r;
}
