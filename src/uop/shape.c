/* shape.c — shape inference for UOps, following tinygrad's UOp._shape case by case (see shape.h): the tensor graph's
 * movement ops and broadcasting, and the lowered kernel's vectors (INDEX, SHRINK of a pointer, STACK, WMMA), in one
 * rule (one_shape); plus UOp.addrspace.
 *
 * uop_shape walks the graph in toposort order once, so a deep graph costs its size, not its depth squared. */
#include "uop/shape.h"

#include <stdio.h>
#include <stdlib.h>

/* Plain shapes: element count, equality, "(4, 3)" text (Python's tuple spelling, "(4,)" for one axis), and numpy's
 * right-aligned broadcast. */
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

/* ---- symbolic sizes ---- */

/* Symbolic shapes: a size is concrete (sym NULL, max.d the size) or an expression (sym, with its vmax in max.d).
 * Two symbolic sizes are equal when they are the same node: hash-consing makes structurally equal expressions one
 * node, and mix_sint simplifies them first. */
SymShape shape_sym_from(const Shape *s) {
  SymShape r;
  memset(&r, 0, sizeof r);
  r.max = *s;
  return r;
}

bool shape_sym_is_symbolic(const SymShape *s) {
  for (int i = 0; i < s->max.ndim; i++)
    if (s->sym[i]) return true;
  return false;
}

UOp *shape_sym_dim(const SymShape *s, int i) { return s->sym[i] ? s->sym[i] : uop_const_int(DT_WEAKINT, s->max.d[i]); }

bool shape_sym_dim_eq(const SymShape *a, int i, const SymShape *b, int j) {
  if (a->sym[i] || b->sym[j]) return a->sym[i] == b->sym[j];
  return a->max.d[i] == b->max.d[j];
}

bool shape_sym_eq(const SymShape *a, const SymShape *b) {
  if (a->max.ndim != b->max.ndim) return false;
  for (int i = 0; i < a->max.ndim; i++)
    if (!shape_sym_dim_eq(a, i, b, i)) return false;
  return true;
}

const char *shape_sym_fmt(const SymShape *s, char *buf, size_t n) {
  size_t at = 0;
  if (n == 0) return buf;
  buf[0] = 0;
  at += (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < s->max.ndim && at < n; i++) {
    if (s->sym[i]) {
      char *e = uop_render(s->sym[i]);
      at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? ", " : "", e);
      free(e);
    } else at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? ", " : "", (long long)s->max.d[i]);
  }
  if (at < n) at += (size_t)snprintf(buf + at, n - at, s->max.ndim == 1 ? ",)" : ")");
  return buf;
}

/* Broadcasting with symbolic sizes: a concrete 1 stretches to anything, otherwise the sizes must be the same. */
bool shape_sym_broadcast(const SymShape *a, const SymShape *b, SymShape *out) {
  int nd = TG_MAX(a->max.ndim, b->max.ndim);
  SymShape r;
  memset(&r, 0, sizeof r);
  r.max.ndim = nd;
  for (int i = 0; i < nd; i++) {
    int ia = i - (nd - a->max.ndim), ib = i - (nd - b->max.ndim);
    bool one_a = ia < 0 || (!a->sym[ia] && a->max.d[ia] == 1), one_b = ib < 0 || (!b->sym[ib] && b->max.d[ib] == 1);
    if (!one_a && !one_b && !shape_sym_dim_eq(a, ia, b, ib)) return false;
    const SymShape *from = !one_a ? a : b;
    int k = !one_a ? ia : ib;
    r.max.d[i] = k >= 0 ? from->max.d[k] : 1;
    r.sym[i] = k >= 0 ? from->sym[k] : NULL;
  }
  *out = r;
  return true;
}

/* a CONST int size, also under CASTs (index dtype lowering casts the sizes of a lowered kernel's PARAMs) */
static bool const_dim(const UOp *x, int64_t *v) {
  while (x->op == TG_OP_CAST && x->nsrc == 1 && dt_is_int(x->dtype)) x = x->src[0];
  if (x->op != TG_OP_CONST || x->arg.c.kind != CK_INT) return false;
  *v = x->arg.c.i;
  return true;
}

/* signed_ok: an offset (a PAD/SHRINK begin), which may be negative for some values (a lowered kernel's gated
 * vector load at x-16); a size may not */
static bool set_dim(SymShape *s, int i, UOp *size, bool signed_ok) {
  int64_t v;
  if (const_dim(size, &v)) {
    s->max.d[i] = v, s->sym[i] = NULL;
    return true;
  }
  if (size->op == TG_OP_CONST) return false;
  if (!dt_is_int(size->dtype) || (!signed_ok && uop_vmin(size) < 0)) return false;
  s->max.d[i] = (int64_t)uop_vmax(size), s->sym[i] = size;
  return true;
}

bool shape_sym_set_dim(SymShape *s, int i, UOp *size) { return set_dim(s, i, size, false); }

static bool as_symshape(const UOp *arg, SymShape *out, bool signed_ok) {
  memset(out, 0, sizeof *out);
  if (arg->op != TG_OP_STACK) {
    out->max.ndim = 1;
    return set_dim(out, 0, (UOp *)arg, signed_ok);
  }
  if (arg->nsrc > TG_MAX_DIMS) return false;
  out->max.ndim = (int)arg->nsrc;
  for (uint32_t i = 0; i < arg->nsrc; i++)
    if (!set_dim(out, (int)i, arg->src[i], signed_ok)) return false;
  return true;
}

bool uop_as_symshape(const UOp *arg, SymShape *out) { return as_symshape(arg, out, false); }

/* The shape-argument form of a SymShape (tinygrad shape_to_shape_arg): one size is the size itself, several a STACK. */
UOp *shape_sym_to_uop(const SymShape *s) {
  if (!shape_sym_is_symbolic(s)) return shape_to_uop(s->max.d, s->max.ndim);
  if (s->max.ndim == 1) return s->sym[0];
  UOp *src[TG_MAX_DIMS];
  for (int i = 0; i < s->max.ndim; i++) src[i] = shape_sym_dim(s, i);
  return uop_new(TG_OP_STACK, DT_WEAKINT, src, (size_t)s->max.ndim, arg_none());
}

/* tinygrad marg: what a movement op's sources say, as SymShapes (PAD/SHRINK: begins and sizes). */
bool uop_marg_pair_sym(const UOp *mop, SymShape *first, SymShape *second) {
  switch (uop_op(mop)) {
  case TG_OP_RESHAPE: case TG_OP_EXPAND:
    if (mop->nsrc < 2) return false;
    if (second) memset(second, 0, sizeof *second);
    return uop_as_symshape(mop->src[1], first);
  case TG_OP_PAD: case TG_OP_SHRINK:
    return mop->nsrc >= 3 && as_symshape(mop->src[1], first, true) && uop_as_symshape(mop->src[2], second) &&
           first->max.ndim == second->max.ndim;
  default: {
    Shape a;
    if (!uop_marg_pair(mop, &a, NULL)) return false;
    *first = shape_sym_from(&a);
    if (second) memset(second, 0, sizeof *second);
    return true;
  }
  }
}

bool uop_as_shape(const UOp *arg, Shape *out) {
  out->ndim = 0;
  if (arg->op != TG_OP_STACK) {
    if (!const_dim(arg, &out->d[0])) return false;
    out->ndim = 1;
    return true;
  }
  if (arg->nsrc > TG_MAX_DIMS) return false;
  for (uint32_t i = 0; i < arg->nsrc; i++)
    if (!const_dim(arg->src[i], &out->d[i])) return false;
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

/* ---- the per-op rule: a source's shape is always computed before its user's (toposort order) ---- */

/* A node's memoized answer: OK with its shape, NONE, or ERROR (then tg_last_error was set when it was computed). */
typedef struct ShapeSlot { ShapeResult res; SymShape s; } ShapeSlot;

/* A cache's slots come in blocks of SLOT_BLOCK (owned holds the blocks): a tensor op computes a handful of shapes,
 * and one malloc per node was a fifth of its cost. */
enum { SLOT_BLOCK = 16 };
/* A freed cache's first block waits here for the next cache (most tensor ops need one block and no other): like the
 * maps' spare tables, caches belong to the one thread that drives the library. */
static void *spare_block;
static ShapeSlot *slot_new(ShapeCache *c) {
  if (!c->first) {
    c->first = spare_block ? spare_block : tg_malloc(SLOT_BLOCK * sizeof(ShapeSlot));
    spare_block = NULL;
    c->block_used = 0;
  } else if (c->block_used == SLOT_BLOCK) {
    tg_vec_push(&c->owned, tg_malloc(SLOT_BLOCK * sizeof(ShapeSlot)));
    c->block_used = 0;
  }
  ShapeSlot *block = c->owned.len ? c->owned.data[c->owned.len - 1] : c->first;
  return block + c->block_used++;
}

static ShapeResult fail(const UOp *u, const char *why) {
  tg_set_error(TG_ERR_INVALID_ARGUMENT, "shape of %s: %s", uop_op_name(uop_op(u)), why);
  return SHAPE_ERROR;
}

static ShapeResult src_shape(const UOpMap *m, const UOp *s, SymShape *out) {
  void **v = uopmap_get(m, s);
  TG_ASSERT(v, "source visited before its user");
  ShapeSlot *slot = *v;
  if (slot->res == SHAPE_OK) *out = slot->s;
  return slot->res;
}

/* tinygrad checks prod(old) == prod(new) symbolically; here: the same symbolic sizes in the same order, and between
 * two of them (and before the first, after the last) the same product of concrete sizes. Each symbolic size stays one
 * axis and concrete axes reshape around it; merging a symbolic size with another (3*i) is refused. */
static bool same_numel(const SymShape *a, const SymShape *b) {
  int i = 0, k = 0;
  for (;;) {
    int64_t pa = 1, pb = 1;
    while (i < a->max.ndim && !a->sym[i]) pa *= a->max.d[i++];
    while (k < b->max.ndim && !b->sym[k]) pb *= b->max.d[k++];
    if (pa != pb) return false;
    if (i == a->max.ndim || k == b->max.ndim) return i == a->max.ndim && k == b->max.ndim;
    if (a->sym[i++] != b->sym[k++]) return false;
  }
}

/* a source that must have a shape: its error stays the first one (the message names the op that failed); a source
 * without a shape is this op's error */
static ShapeResult need_shape(const UOp *u, const UOpMap *m, const UOp *src, SymShape *out, const char *why) {
  ShapeResult r = src_shape(m, src, out);
  return r == SHAPE_NONE ? fail(u, why) : r;
}

/* The movement ops and REDUCE, given the source's shape ps, with tinygrad's validity checks: reshape keeps the
 * element count, expand prepends, permute is a permutation, pad/shrink stay inside, flip keeps the shape, REDUCE drops
 * its leading axes. */
static ShapeResult movement_shape(const UOp *u, const SymShape *ps, SymShape *out) {
  SymShape a, b;
  char b1[200], b2[200];
  TgOp op = uop_op(u);
  memset(out, 0, sizeof *out);
  if (op == TG_OP_REDUCE) {
    if (u->arg.kind != ARG_REDUCE || u->arg.red.naxes < 0 || u->arg.red.naxes > ps->max.ndim) return fail(u, "invalid axis count");
    out->max.ndim = ps->max.ndim - u->arg.red.naxes;
    for (int i = 0; i < out->max.ndim; i++)
      out->max.d[i] = ps->max.d[i + u->arg.red.naxes], out->sym[i] = ps->sym[i + u->arg.red.naxes];
    return SHAPE_OK;
  }
  if (!uop_marg_pair_sym(u, &a, &b)) return fail(u, "shape argument is not a shape (sizes must be ints or int expressions of Variables)");
  int nd = ps->max.ndim;
  switch (op) {
  case TG_OP_RESHAPE:
    for (int i = 0; i < a.max.ndim; i++)
      if (a.max.d[i] < 0) return fail(u, "negative size");
    if (!same_numel(ps, &a)) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "shape of RESHAPE: bad reshape %s -> %s", shape_sym_fmt(ps, b1, sizeof b1),
                   shape_sym_fmt(&a, b2, sizeof b2));
      return SHAPE_ERROR;
    }
    *out = a;
    return SHAPE_OK;
  case TG_OP_EXPAND:
    if (a.max.ndim + nd > TG_MAX_DIMS) return fail(u, "too many dimensions");
    *out = a;
    for (int i = 0; i < nd; i++) out->max.d[a.max.ndim + i] = ps->max.d[i], out->sym[a.max.ndim + i] = ps->sym[i];
    out->max.ndim = a.max.ndim + nd;
    return SHAPE_OK;
  case TG_OP_PERMUTE: {
    if (a.max.ndim != nd) return fail(u, "permutation length differs from ndim");
    bool seen[TG_MAX_DIMS] = {0};
    for (int i = 0; i < nd; i++) {
      int64_t k = a.max.d[i];
      if (k < 0 || k >= nd || seen[k]) return fail(u, "invalid permutation");
      seen[k] = true;
      out->max.d[i] = ps->max.d[k], out->sym[i] = ps->sym[k];
    }
    out->max.ndim = nd;
    return SHAPE_OK;
  }
  case TG_OP_PAD: case TG_OP_SHRINK:
    if (a.max.ndim != nd) return fail(u, "argument length differs from ndim");
    for (int i = 0; i < nd; i++) {
      /* concrete: exact; symbolic: what holds for some value in the ranges, as tinygrad's resolve() lets an
       * undecided comparison pass (a realize checks its bound values) */
      i128 off = a.sym[i] ? uop_vmin(a.sym[i]) : a.max.d[i], sz = b.sym[i] ? uop_vmin(b.sym[i]) : b.max.d[i];
      i128 off_hi = a.max.d[i], src = ps->max.d[i], lo = ps->sym[i] ? uop_vmin(ps->sym[i]) : src;
      bool ok = op == TG_OP_PAD ? (sz >= 0 && off_hi >= 0 && off + lo <= b.max.d[i])
                                : (off_hi >= 0 && sz >= 0 && off + sz <= src);
      if (!ok) {
        char b3[200];
        tg_set_error(TG_ERR_INVALID_ARGUMENT, "shape of %s: invalid (offsets %s, sizes %s) for %s", uop_op_name(op),
                     shape_sym_fmt(&a, b1, sizeof b1), shape_sym_fmt(&b, b2, sizeof b2), shape_sym_fmt(ps, b3, sizeof b3));
        return SHAPE_ERROR;
      }
    }
    *out = b;
    return SHAPE_OK;
  case TG_OP_FLIP:
    if (a.max.ndim != nd) return fail(u, "flip flags length differs from ndim");
    *out = *ps;
    return SHAPE_OK;
  default: return fail(u, "not a movement op");
  }
}

/* out += t's axes from `from` on (sizes and expressions together). */
static void append_dims(SymShape *out, const SymShape *t, int from) {
  for (int k = from; k < t->max.ndim; k++) {
    out->max.d[out->max.ndim] = t->max.d[k];
    out->sym[out->max.ndim++] = t->sym[k];
  }
}

/* One node's shape from its sources', tinygrad's _shape case by case: ops of the schedule and the linearized program
 * have none; INDEX concatenates the index shapes and the rest of the indexed one; STACK prepends its count;
 * buffers and PARAMs take their size argument; WMMA the accumulator's fragment; pass-through ops their first
 * source's; then movement, unary (and CAST) and broadcasting ALU ops. */
static ShapeResult one_shape(UOp *u, const UOpMap *m, SymShape *out) {
  SymShape s0, t;
  ShapeResult sr;
  TgOp op = uop_op(u);
  memset(out, 0, sizeof *out);
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
    if ((sr = need_shape(u, m, u->src[0], &s0, "indexed source has no shape")) != SHAPE_OK) return sr;
    for (uint32_t i = 1; i < u->nsrc; i++) {
      if ((sr = need_shape(u, m, u->src[i], &t, "index has no shape")) != SHAPE_OK) return sr;
      if (out->max.ndim + t.max.ndim > TG_MAX_DIMS) return fail(u, "too many dimensions");
      append_dims(out, &t, 0);
    }
    int rest = s0.max.ndim - ((int)u->nsrc - 1);
    if (rest > 0 && out->max.ndim + rest > TG_MAX_DIMS) return fail(u, "too many dimensions");
    append_dims(out, &s0, (int)u->nsrc - 1);
    return SHAPE_OK;
  }
  case TG_OP_STACK:
    if (u->nsrc == 0) return SHAPE_OK;
    if ((sr = need_shape(u, m, u->src[0], &s0, "element has no shape")) != SHAPE_OK) return sr;
    if (s0.max.ndim + 1 > TG_MAX_DIMS) return fail(u, "too many dimensions");
    out->max.ndim = 1;
    out->max.d[0] = u->nsrc;
    append_dims(out, &s0, 0);
    return SHAPE_OK;
  case TG_OP_CONST: case TG_OP_GETADDR: case TG_OP_RANGE: case TG_OP_SPECIAL: return SHAPE_OK;
  case TG_OP_BINARY: out->max.ndim = 1; out->max.d[0] = u->arg.len; return SHAPE_OK;
  case TG_OP_BUFFER: case TG_OP_PARAM:
    /* a lowered kernel's PARAM may be sized by an expression (a symbolic buffer view): its maximum, as tinygrad's
     * to_max_shape; the tensor graph's buffers are concrete (symbolic shapes are views of one sized for the max) */
    if (u->nsrc == 0) return SHAPE_OK;
    if (!uop_as_symshape(u->src[0], out)) return fail(u, "the size is not an int or an int expression");
    return SHAPE_OK;
  case TG_OP_CUSTOM: case TG_OP_CUSTOMI: {
    if (u->dtype == DT_VOID) return SHAPE_NONE;
    bool any = false;
    for (uint32_t i = 0; i < u->nsrc; i++) {
      ShapeResult r = src_shape(m, u->src[i], &t);
      if (r == SHAPE_ERROR) return r;
      if (r == SHAPE_NONE) continue;
      if (!any) *out = t;
      else if (!shape_sym_broadcast(out, &t, out)) return fail(u, "sources cannot be broadcast");
      any = true;
    }
    return any ? SHAPE_OK : SHAPE_NONE;
  }
  case TG_OP_STAGE: {
    if ((sr = need_shape(u, m, u->src[0], &s0, "source has no shape")) != SHAPE_OK) return sr;
    if ((int)u->nsrc - 1 + s0.max.ndim > TG_MAX_DIMS) return fail(u, "too many dimensions");
    for (uint32_t i = 1; i < u->nsrc; i++) out->max.d[out->max.ndim++] = (int64_t)uop_vmax(u->src[i]) + 1;
    append_dims(out, &s0, 0);
    return SHAPE_OK;
  }
  case TG_OP_WMMA: {
    SymShape a, b, c;
    if (u->nsrc < 3 || src_shape(m, u->src[0], &a) != SHAPE_OK || src_shape(m, u->src[1], &b) != SHAPE_OK ||
        src_shape(m, u->src[2], &c) != SHAPE_OK || !a.max.ndim || !b.max.ndim || !c.max.ndim)
      return fail(u, "sources need shapes");
    int64_t last = c.max.d[c.max.ndim - 1];
    a.max.ndim--, b.max.ndim--, c.max.ndim--;
    if (!shape_sym_broadcast(&a, &b, out) || !shape_sym_broadcast(out, &c, out)) return fail(u, "sources cannot be broadcast");
    out->sym[out->max.ndim] = NULL;
    out->max.d[out->max.ndim++] = last;
    return SHAPE_OK;
  }
  case TG_OP_MSTACK: case TG_OP_MSELECT: case TG_OP_DETACH: case TG_OP_CUSTOM_GRAD: case TG_OP_CONTIGUOUS: case TG_OP_CONTIGUOUS_BACKWARD:
  case TG_OP_AFTER: case TG_OP_LOAD: case TG_OP_COPY: case TG_OP_ALLREDUCE: case TG_OP_STORE: case TG_OP_END:
    return src_shape(m, u->src[0], out);
  case TG_OP_BITCAST: {
    ShapeResult r = src_shape(m, u->src[0], out);
    if (r != SHAPE_OK) return r;
    int osz = dt_itemsize(u->dtype), isz = dt_itemsize(u->src[0]->dtype);
    if (osz != isz && out->max.ndim > 0) {
      int last = out->max.ndim - 1;
      if (out->sym[last]) return fail(u, "bitcast to another item size on a symbolic last axis not supported yet");
      if ((out->max.d[last] * isz) % osz) return fail(u, "unsupported size in bitcast");
      out->max.d[last] = out->max.d[last] * isz / osz;
    }
    return SHAPE_OK;
  }
  case TG_OP_UNSHARD:
    if (u->nsrc == 0) return SHAPE_NONE;
    return fail(u, "multi-device UNSHARD not supported yet");
  case TG_OP_RESHAPE:
    if (u->src[0]->op == TG_OP_NOOP) {
      if (!uop_as_symshape(u->src[1], out)) return fail(u, "shape argument is not a shape");
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
      else if (!shape_sym_broadcast(out, &t, out)) {
        char b1[200], b2[200];
        tg_set_error(TG_ERR_INVALID_ARGUMENT, "shape of %s: shapes %s and %s cannot be broadcast", uop_op_name(op),
                     shape_sym_fmt(out, b1, sizeof b1), shape_sym_fmt(&t, b2, sizeof b2));
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
  uopmap_init(&c->aspace);
  c->first = NULL;
  c->owned.data = NULL, c->owned.len = c->owned.cap = 0;
  c->block_used = 0;
}

void shape_cache_free(ShapeCache *c) {
  for (size_t i = 0; i < c->owned.len; i++) tg_free(c->owned.data[i]);
  tg_vec_free(&c->owned);
  if (c->first && !spare_block) spare_block = c->first;
  else tg_free(c->first);
  c->first = NULL;
  uopmap_free(&c->map);
  uopmap_free(&c->aspace);
}

/* One walk from u that stops at cached nodes, each new node's rule in order (sources first): a graph is walked once
 * per cache however many queries touch it (a tensor call's queries share the context's cache, seeded with the
 * inputs' shapes, so a query costs the nodes built since the last one). */
static void shape_visit(UOp *n, void *ctx) {
  ShapeCache *c = ctx;
  ShapeSlot *slot = slot_new(c);
  slot->res = one_shape(n, &c->map, &slot->s);
  uopmap_put(&c->map, n, slot);
}

ShapeResult uop_shape_sym_cached(UOp *u, ShapeCache *c, SymShape *out) {
  void **hit = uopmap_get(&c->map, u);
  if (!hit) {
    uopmap_fill(&c->map, u, uop_data_sources, shape_visit, c);
    hit = uopmap_get(&c->map, u);
  }
  ShapeSlot *slot = *hit;
  if (slot->res == SHAPE_OK) *out = slot->s;
  else memset(out, 0, sizeof *out);
  return slot->res;
}

/* The memoized answer itself, no copy (a SymShape is 264 bytes): for queries that read a rank or a size. The pointer
 * stays valid while the cache lives (slots never move). */
ShapeResult uop_shape_sym_peek(UOp *u, ShapeCache *c, const SymShape **out) {
  void **hit = uopmap_get(&c->map, u);
  if (!hit) {
    SymShape s;
    uop_shape_sym_cached(u, c, &s);
    hit = uopmap_get(&c->map, u);
  }
  const ShapeSlot *slot = *hit;
  *out = &slot->s;
  return slot->res;
}

/* The concrete form: a symbolic result is an UNSUPPORTED error naming the shape, never its maximum as if it were the
 * size. */
ShapeResult uop_shape_cached(UOp *u, ShapeCache *c, Shape *out) {
  SymShape s;
  ShapeResult r = uop_shape_sym_cached(u, c, &s);
  out->ndim = 0;
  if (r != SHAPE_OK) return r;
  if (shape_sym_is_symbolic(&s)) {
    char b[200];
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: the symbolic shape %s is not supported here yet",
                 shape_sym_fmt(&s, b, sizeof b));
    return SHAPE_ERROR;
  }
  *out = s.max;
  return SHAPE_OK;
}

/* A known shape for u (a handle's), unless u was computed already (the computed one is the same). */
void shape_cache_seed_sym(ShapeCache *c, UOp *u, const SymShape *s) {
  if (uopmap_get(&c->map, u)) return;
  ShapeSlot *slot = slot_new(c);
  slot->res = SHAPE_OK;
  slot->s = *s;
  uopmap_put(&c->map, u, slot);
}

void shape_cache_seed(ShapeCache *c, UOp *u, const Shape *s) {
  SymShape ss = shape_sym_from(s);
  shape_cache_seed_sym(c, u, &ss);
}

ShapeResult uop_shape_sym(UOp *u, SymShape *out) {
  ShapeCache c;
  shape_cache_init(&c);
  ShapeResult r = uop_shape_sym_cached(u, &c, out);
  shape_cache_free(&c);
  return r;
}

ShapeResult uop_shape(UOp *u, Shape *out) {
  ShapeCache c;
  shape_cache_init(&c);
  ShapeResult r = uop_shape_cached(u, &c, out);
  shape_cache_free(&c);
  return r;
}

int64_t uop_max_numel(UOp *u, ShapeCache *c) {
  SymShape s;
  if (uop_shape_sym_cached(u, c, &s) != SHAPE_OK) return 1;
  return shape_numel(&s.max);
}

/* ---- addrspace ---- */

/* tinygrad UOp.addrspace: PARAMs and buffers say where they live, computed scalars (RANGE, SPECIAL, a LOAD's value)
 * are ALU, INDEX/CAST/AFTER/movement pass their first source's, and elementwise ops, STACK and WMMA the common space
 * of their sources (none when they disagree). cg_add_loads reads memory operands through a LOAD by it, and the
 * renderers tell values from memory by it. */
static AddrSpace compute_addrspace(ShapeCache *c, const UOp *u) {
  switch (uop_op(u)) {
  case TG_OP_PARAM: case TG_OP_BUFFER: return u->arg.kind == ARG_PARAM ? (AddrSpace)u->arg.param->addrspace : ADDR_NONE;
  case TG_OP_SPECIAL: case TG_OP_RANGE: case TG_OP_LOAD: return ADDR_ALU;
  case TG_OP_INDEX: case TG_OP_CAST: case TG_OP_AFTER: case TG_OP_REDUCE: case TG_OP_STORE: case TG_OP_MSTACK:
  case TG_OP_MSELECT: case TG_OP_END: case TG_OP_UNSHARD:
    return u->nsrc ? uop_addrspace(c, u->src[0]) : ADDR_NONE;
  default: break;
  }
  if (op_has(uop_op(u), OPP_MOVEMENT)) return u->nsrc ? uop_addrspace(c, u->src[0]) : ADDR_NONE;
  if (uop_is(u, TG_OP_STACK) || uop_is(u, TG_OP_WMMA) || uop_is(u, TG_OP_GROUP) || op_is_elementwise(uop_op(u))) {
    AddrSpace found = ADDR_NONE; /* the sources' common space; None when they disagree */
    for (uint32_t i = 0; i < u->nsrc; i++) {
      AddrSpace a = uop_addrspace(c, u->src[i]);
      if (a == ADDR_NONE) continue;
      if (found != ADDR_NONE && a != found) return ADDR_NONE;
      found = a;
    }
    return found;
  }
  return ADDR_NONE;
}

AddrSpace uop_addrspace(ShapeCache *c, const UOp *u) {
  void **v = uopmap_get(&c->aspace, u);
  if (v) return (AddrSpace)((uintptr_t)*v - 1);
  AddrSpace a = compute_addrspace(c, u);
  uopmap_put(&c->aspace, u, (void *)(uintptr_t)(a + 1));
  return a;
}
