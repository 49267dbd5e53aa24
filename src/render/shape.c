/* shape.c — tinygrad's UOp._shape for lowered kernels (shape.h part of render.h): after devectorizing, a value's
 * vector width is its shape ((2,) for a LOAD of a 2-wide SHRINK), and the renderer and the interpreter read it to
 * pick vector types, vector accesses and lane counts. Covers the ops that survive lowering; a movement op or a shape
 * with more than 8 dims is an error, not a guess. */
#include "render.h"

#include <stdlib.h>
#include <string.h>

void shape_cache_init(ShapeCache *c) {
  uopmap_init(&c->memo);
  uopmap_init(&c->aspace);
}

void shape_cache_free(ShapeCache *c) {
  for (size_t i = 0; i < c->memo.cap; i++)
    if (c->memo.keys[i]) tg_free(c->memo.vals[i]);
  uopmap_free(&c->memo);
  uopmap_free(&c->aspace);
}

/* tinygrad as_shape (to_max_shape of it): a CONST is one dim, a STACK lists dims, anything else is one dim. */
static int64_t dim_value(const UOp *x) {
  const UOp *y = x;
  while (uop_is(y, TG_OP_CAST) && y->nsrc == 1) y = y->src[0];
  if (uop_is_const(y) && uop_const_val(y).kind == CK_INT) return uop_const_val(y).i;
  return (int64_t)uop_vmax((UOp *)x);
}

static bool as_shape(const UOp *x, UOpShape *out) {
  out->has_shape = true;
  out->ndim = 0;
  if (!uop_is(x, TG_OP_STACK)) {
    out->dims[out->ndim++] = dim_value(x);
    return true;
  }
  if (x->nsrc > 8) return false;
  for (uint32_t i = 0; i < x->nsrc; i++) out->dims[out->ndim++] = dim_value(x->src[i]);
  return true;
}

static const UOpShape no_shape = {false, 0, {0}};
static const UOpShape scalar_shape = {true, 0, {0}};

static bool shape_fail(const UOp *u, const char *why) {
  tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: shape of %s %s: %s", uop_op_name(uop_op(u)), u->dtype->name, why);
  return false;
}

/* numpy-style broadcast of right-aligned dims (out may be a or b) */
static bool broadcast(const UOpShape *a, const UOpShape *b, UOpShape *out) {
  int nd = TG_MAX(a->ndim, b->ndim);
  UOpShape r = {true, nd, {0}};
  for (int i = 0; i < nd; i++) {
    int ia = a->ndim - nd + i, ib = b->ndim - nd + i;
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) return false;
    r.dims[i] = da == 1 ? db : da;
  }
  *out = r;
  return true;
}

static bool compute_shape(ShapeCache *c, const UOp *u, UOpShape *out) {
  TgOp op = uop_op(u);
  UOpShape s0;
  switch (op) {
  case TG_OP_IF: case TG_OP_BARRIER: case TG_OP_SINK: case TG_OP_REWRITE_ERROR: case TG_OP_ENDIF: case TG_OP_GROUP:
  case TG_OP_LINEAR: case TG_OP_PROGRAM: case TG_OP_SOURCE: case TG_OP_TUPLE: case TG_OP_FUNCTION:
    *out = no_shape;
    return true;
  case TG_OP_CONST: case TG_OP_RANGE: case TG_OP_SPECIAL: case TG_OP_GETADDR:
    *out = scalar_shape;
    return true;
  case TG_OP_NOOP:
    if (u->nsrc == 0) { *out = no_shape; return true; }
    return shape_of(c, u->src[0], out);
  case TG_OP_BUFFER: case TG_OP_PARAM:
    if (u->nsrc == 0) { *out = scalar_shape; return true; }
    return as_shape(u->src[0], out) || shape_fail(u, "more than 8 dims");
  case TG_OP_WMMA: return shape_of(c, u->src[2], out); /* the accumulator's fragment */
  case TG_OP_STACK: {
    if (u->nsrc == 0) { *out = scalar_shape; return true; }
    if (!shape_of(c, u->src[0], &s0)) return false;
    if (s0.ndim >= 8) return shape_fail(u, "more than 8 dims");
    out->has_shape = true;
    out->ndim = s0.ndim + 1;
    out->dims[0] = u->nsrc;
    for (int i = 0; i < s0.ndim; i++) out->dims[i + 1] = s0.dims[i];
    return true;
  }
  case TG_OP_INDEX: {
    UOpShape acc = scalar_shape, si;
    for (uint32_t k = 1; k < u->nsrc; k++) {
      if (!shape_of(c, u->src[k], &si)) return false;
      if (acc.ndim + si.ndim > 8) return shape_fail(u, "more than 8 dims");
      for (int i = 0; i < si.ndim; i++) acc.dims[acc.ndim++] = si.dims[i];
    }
    if (!shape_of(c, u->src[0], &s0)) return false;
    for (int i = (int)u->nsrc - 1; i < s0.ndim; i++) {
      if (acc.ndim >= 8) return shape_fail(u, "more than 8 dims");
      acc.dims[acc.ndim++] = s0.dims[i];
    }
    *out = acc;
    return true;
  }
  case TG_OP_SHRINK:
    if (u->nsrc < 3) return shape_fail(u, "SHRINK without a size");
    return as_shape(u->src[2], out) || shape_fail(u, "more than 8 dims");
  case TG_OP_AFTER: case TG_OP_LOAD: case TG_OP_STORE: case TG_OP_END: case TG_OP_CAST: case TG_OP_MSTACK:
  case TG_OP_MSELECT: case TG_OP_DETACH: case TG_OP_CONTIGUOUS: case TG_OP_CONTIGUOUS_BACKWARD: case TG_OP_COPY:
  case TG_OP_ALLREDUCE:
    return shape_of(c, u->src[0], out);
  case TG_OP_BITCAST: {
    if (!shape_of(c, u->src[0], &s0)) return false;
    int in = dt_itemsize(u->src[0]->dtype), outsz = dt_itemsize(u->dtype);
    if (s0.has_shape && s0.ndim > 0 && in != outsz) {
      if ((s0.dims[s0.ndim - 1] * in) % outsz) return shape_fail(u, "unsupported size in bitcast");
      s0.dims[s0.ndim - 1] = s0.dims[s0.ndim - 1] * in / outsz;
    }
    *out = s0;
    return true;
  }
  case TG_OP_CUSTOM: case TG_OP_CUSTOMI: {
    if (u->dtype == DT_VOID) { *out = no_shape; return true; }
    UOpShape acc = no_shape;
    for (uint32_t k = 0; k < u->nsrc; k++) {
      if (!shape_of(c, u->src[k], &s0)) return false;
      if (!s0.has_shape) continue;
      if (!acc.has_shape) acc = s0;
      else if (!broadcast(&acc, &s0, &acc)) return shape_fail(u, "sources do not broadcast");
    }
    *out = acc;
    return true;
  }
  default: break;
  }
  if (op_has(op, OPP_UNARY)) return shape_of(c, u->src[0], out);
  if (op_has(op, OPP_BINARY) || op_has(op, OPP_TERNARY)) {
    if (!shape_of(c, u->src[0], out)) return false;
    for (uint32_t k = 1; k < u->nsrc; k++) {
      if (!shape_of(c, u->src[k], &s0)) return false;
      if (!out->has_shape || !s0.has_shape) return shape_fail(u, "a source without a shape");
      if (!broadcast(out, &s0, out)) return shape_fail(u, "sources do not broadcast");
    }
    return true;
  }
  return shape_fail(u, "no shape rule (movement ops are gone after lowering)");
}

bool shape_of(ShapeCache *c, const UOp *u, UOpShape *out) {
  void **v = uopmap_get(&c->memo, u);
  if (v) {
    *out = *(const UOpShape *)*v;
    return true;
  }
  if (!compute_shape(c, u, out)) return false;
  UOpShape *keep = tg_malloc(sizeof *keep);
  *keep = *out;
  uopmap_put(&c->memo, u, keep);
  return true;
}

int64_t shape_max_numel(ShapeCache *c, const UOp *u) {
  UOpShape s;
  if (!shape_of(c, u, &s) || !s.has_shape) return 1;
  int64_t n = 1;
  for (int i = 0; i < s.ndim; i++) n *= s.dims[i];
  return n;
}

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

/* marks the arithmetic under an address (not through END: a loop's value is not indexing) */
static void mark_indexing(UOp *u, UOpMap *seen) {
  if (uopmap_get(seen, u) || u->op == TG_OP_END) return;
  uopmap_put(seen, u, u);
  for (uint32_t i = 0; i < u->nsrc; i++) mark_indexing(u->src[i], seen);
}

double render_estimate_flops(UOp *linear) {
  UOpMap indexing;
  uopmap_init(&indexing);
  for (uint32_t i = 0; i < linear->nsrc; i++) {
    UOp *u = linear->src[i];
    if (u->op == TG_OP_INDEX || u->op == TG_OP_SHRINK)
      for (uint32_t k = 1; k < u->nsrc; k++) mark_indexing(u->src[k], &indexing);
  }
  ShapeCache sc;
  shape_cache_init(&sc);
  double trips = 1, flops = 0;
  TG_VEC(double) stack = {0};
  for (uint32_t i = 0; i < linear->nsrc; i++) {
    UOp *u = linear->src[i];
    TgOp op = uop_op(u);
    if (op == TG_OP_RANGE) {
      tg_vec_push(&stack, trips);
      i128 n = uop_vmax(u) + 1;
      trips *= n > 0 ? (double)n : 1;
    } else if (op == TG_OP_END) {
      for (uint32_t k = 1; k < u->nsrc && stack.len; k++) trips = stack.data[--stack.len];
    } else if ((op == TG_OP_PARAM || op == TG_OP_BUFFER) && u->arg.kind == ARG_PARAM &&
               u->arg.param->addrspace == ADDR_ALU && strcmp(u->arg.param->name, "core_id") == 0) {
      trips *= (double)(u->arg.param->vmax + 1);
    } else if (op_is_alu(op) && !uopmap_get(&indexing, u)) {
      flops += trips * (double)shape_max_numel(&sc, u) * (op == TG_OP_MULACC ? 2 : 1);
    }
  }
  tg_vec_free(&stack);
  shape_cache_free(&sc);
  uopmap_free(&indexing);
  return flops;
}
