/* callify.c — tinygrad's transform_to_call (tensor.py): the tensor graph becomes the body of one CALL.
 *
 *   - every node that must get storage (the roots' non-buffer bases, every CONTIGUOUS) is written into a fresh global
 *     BUFFER: x -> AFTER(buf, STORE(buf, x)), buf viewed in x's shape; the map records original -> buffer view;
 *   - assigns AFTER(target, STORE(target, value)) whose target is a buffer stay, and are recorded the same way;
 *     an assign into something that is not a buffer is a CONTIGUOUS of the value;
 *   - DETACH / CONTIGUOUS_BACKWARD are dropped, and so is a hinted CONTIGUOUS the device's renderer does not ask for
 *     (uop.h ContigHint: the CPU-only copies of a conv's operands);
 *   - all writes are collected under one SINK, and every global BUFFER in it is replaced by PARAM(slot), slots in
 *     visit order, so the body's key is the same whichever buffers it runs on (the schedule cache key);
 *   - a bound Variable AFTER(var, STORE(var, CONST)) is a call input, not an assign: it gets a slot like a buffer, the
 *     body sees PARAM(slot, ALU, name "p<slot>", the Variable's range) and the CALL args keep the bound value
 *     (tinygrad param_like), so the key does not depend on the value; an unbound Variable stays in the body as it is
 *     (realizing it fails in the engine: it has no value).
 *   - COPY(x, device) becomes a new buffer on the device written by a flat copy of x (tinygrad pm_copy_to_store).
 * Not yet: precompiled FUNCTIONs, contiguous views of buffers folded to SHRINK views, DISK copies. */
#include "schedule/sched_internal.h"

#include "uop/symbolic.h"

#include <stdio.h>

typedef struct CallifyCtx {
  SchedNewBuffer nb;
  void *nbctx;
  ShapeCache shapes;
  UOpMap done;          /* original node -> rewritten node */
  UOpMap realize_base;  /* roots' bases that need storage */
  CallifyResult *res;
  UOpVec assigns;
} CallifyCtx;

static bool is_virtual(UOp *u) { return dt_is_weak(u->dtype) || sched_device(u) == NULL; }

static tg_status unsupported(const char *what) {
  return tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: scheduling %s is not supported yet", what);
}

/* x (rewritten) is stored into a new buffer shaped like `orig`; returns the AFTER that stands for it. */
static UOp *store_into_new_buffer(CallifyCtx *c, UOp *x, UOp *orig, tg_status *st) {
  SymShape ssh;
  if (uop_shape_sym_cached(orig, &c->shapes, &ssh) != SHAPE_OK) { *st = TG_ERR_INVALID_ARGUMENT; return NULL; }
  Shape sh = ssh.max; /* a symbolic shape is stored into a buffer sized for its maximum, viewed shrunk to it */
  if (dt_is_weak(orig->dtype)) {
    *st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "cannot realize a weak dtype (%s); cast to a concrete dtype first",
                       orig->dtype->name);
    return NULL;
  }
  int64_t numel = shape_numel(&sh);
  if (numel == 0) return x; /* nothing to store: a size-0 value stays as it is (tinygrad drops the contiguous) */
  const char *dev = sched_device(orig);
  UOp *buf = c->nb(dev ? dev : tg_default_device(), dt_strong(orig->dtype), numel, c->nbctx);
  if (!buf) { *st = tg_set_error(TG_ERR_OUT_OF_MEMORY, "schedule: could not create a buffer of %lld elements", (long long)numel); return NULL; }
  tg_vec_push(&c->res->new_buffers, uop_keep(buf));
  UOp *view = buf;
  if (sh.ndim != 1) {
    UOp *src[2] = {buf, shape_to_uop(sh.d, sh.ndim)};
    view = uop_new(TG_OP_RESHAPE, buf->dtype, src, 2, arg_none());
  }
  if (shape_sym_is_symbolic(&ssh)) {
    SymShape zero = shape_sym_from(&sh);
    memset(zero.max.d, 0, sizeof zero.max.d);
    UOp *src[3] = {view, shape_sym_to_uop(&zero), shape_sym_to_uop(&ssh)};
    view = uop_new(TG_OP_SHRINK, buf->dtype, src, 3, arg_none());
  }
  UOp *ss[2] = {view, x};
  UOp *store = uop_new(TG_OP_STORE, DT_VOID, ss, 2, arg_none());
  UOp *as[2] = {view, store};
  UOp *after = uop_new(TG_OP_AFTER, view->dtype, as, 2, arg_none());
  tg_vec_push(&c->assigns, after);
  tg_vec_push(&c->res->map_from, uop_keep(orig));
  tg_vec_push(&c->res->map_to, uop_keep(view));
  return after;
}

/* The storage an assign AFTER stands for: its target without AFTERs, views re-applied (tinygrad finalize_after). */
static UOp *assign_view(UOp *after) {
  UOpVec views = {0};
  UOp *u = after;
  while ((op_has(uop_op(u), OPP_MOVEMENT) || u->op == TG_OP_UNSHARD || u->op == TG_OP_BITCAST || u->op == TG_OP_AFTER)) {
    if (u->op != TG_OP_AFTER) tg_vec_push(&views, u);
    u = u->src[0];
  }
  while (views.len) {
    UOp *v = views.data[--views.len];
    u = sched_rebuild(v, uop_op(v), v->dtype, 0, u);
  }
  tg_vec_free(&views);
  return u;
}

/* tinygrad contiguous_mops_to_view: movement ops over a BUFFER that read one contiguous range of it need no kernel:
 * the CONTIGUOUS becomes that range, SHRINK(buffer, offset, size) viewed in x's shape. NULL if x is not such a view. */
static UOp *contiguous_view(CallifyCtx *c, UOp *x) {
  UOp *buf = sched_base(x);
  Shape xs, bs;
  if (buf == x || !sched_is_global_buffer(buf) || x->dtype != buf->dtype) return NULL;
  if (uop_shape_cached(x, &c->shapes, &xs) != SHAPE_OK || uop_shape_cached(buf, &c->shapes, &bs) != SHAPE_OK || bs.ndim != 1) return NULL;
  int64_t numel = shape_numel(&xs);
  if (numel == 0) return NULL;
  /* Cheap refusals first (the push-down below costs 0.05-0.2 ms, at every realize): a PAD or EXPAND that adds
   * elements makes values the buffer does not hold once each; and one PERMUTE or FLIP that reorders axes longer
   * than 1 reads the buffer out of order when nothing could undo it: no second reorder, and only RESHAPEs (which keep
   * every element in order) between it and x, no SHRINK that could drop the out-of-order pair. */
  int reorders = 0;
  bool shrunk_after = false, undoable = false; /* a SHRINK between x and cur; one after a reorder */
  for (UOp *cur = x; cur != buf; cur = cur->src[0]) {
    if (cur->op == TG_OP_SHRINK) shrunk_after = true;
    bool grows = cur->op == TG_OP_PAD || cur->op == TG_OP_EXPAND, reorder = cur->op == TG_OP_PERMUTE || cur->op == TG_OP_FLIP;
    if (!grows && !reorder) continue;
    Shape after, before, arg, unused;
    if (uop_shape_cached(cur, &c->shapes, &after) != SHAPE_OK || uop_shape_cached(cur->src[0], &c->shapes, &before) != SHAPE_OK)
      return NULL;
    if (grows) {
      if (shape_numel(&after) > shape_numel(&before)) return NULL;
      continue;
    }
    if (!uop_marg_pair(cur, &arg, &unused)) return NULL;
    int64_t last = -1;
    for (int i = 0; i < arg.ndim; i++) {
      int64_t axis = cur->op == TG_OP_PERMUTE ? arg.d[i] : i;
      if (axis < 0 || axis >= before.ndim || before.d[axis] <= 1) continue;
      if (cur->op == TG_OP_FLIP ? arg.d[i] != 0 : axis < last) {
        reorders++;
        undoable |= shrunk_after;
        break;
      }
      last = axis;
    }
  }
  if (reorders == 1 && !undoable) return NULL;
  UOpScope sc = uop_scope_begin();
  /* index x's flattened view with one range and push it down to the buffer */
  Shape flat = {1, {numel}};
  UOp *r = uop_range(sched_weak_int(numel), 0, AXIS_LOOP);
  UOp *idx[TG_MAX_DIMS], *tmp[TG_MAX_DIMS];
  size_t n = 0;
  sched_apply_reshape(&xs, &flat, &r, 1, idx);
  n = (size_t)xs.ndim;
  UOp *cur = x;
  bool ok = true;
  while (ok && cur != buf) {
    if (cur->op == TG_OP_DETACH || cur->op == TG_OP_CUSTOM_GRAD) { cur = cur->src[0]; continue; }
    SymShape ps;
    size_t nn = 0;
    ok = uop_shape_sym_cached(cur->src[0], &c->shapes, &ps) == SHAPE_OK && sched_apply_movement(cur, &ps, idx, n, tmp, &nn);
    for (size_t k = 0; ok && k < nn; k++) idx[k] = tmp[k];
    n = nn;
    cur = cur->src[0];
  }
  int64_t off = -1;
  if (ok && n == 1) {
    UOp *e = uop_simplify(idx[0]);
    if (e == r) off = 0;
    else if (e->op == TG_OP_ADD && e->src[0] == r && e->src[1]->op == TG_OP_CONST && e->src[1]->arg.c.kind == CK_INT) off = e->src[1]->arg.c.i;
    else if (numel == 1 && e->op == TG_OP_CONST && e->arg.c.kind == CK_INT) off = e->arg.c.i;
  }
  uop_scope_end(sc);
  if (off < 0) return NULL;
  UOp *view = buf;
  if (off != 0 || numel != bs.d[0]) {
    UOp *ss[3] = {buf, sched_weak_int(off), sched_weak_int(numel)};
    view = uop_new(TG_OP_SHRINK, buf->dtype, ss, 3, arg_none());
  }
  if (xs.ndim != 1) {
    UOp *rs[2] = {view, shape_to_uop(xs.d, xs.ndim)};
    view = uop_new(TG_OP_RESHAPE, view->dtype, rs, 2, arg_none());
  }
  return view;
}

static UOp *rebuild(CallifyCtx *c, UOp *x) {
  UOpVec src = {0};
  bool changed = false;
  for (uint32_t k = 0; k < x->nsrc; k++) {
    void **p = uopmap_get(&c->done, x->src[k]);
    tg_vec_push(&src, p ? (UOp *)*p : x->src[k]);
    changed |= src.data[k] != x->src[k];
  }
  UOp *r = changed ? uop_replace_src(x, src.data, src.len) : x;
  tg_vec_free(&src);
  return r;
}

/* tinygrad pm_copy_to_store (convert_copy_to_store): COPY(x, device) becomes a fresh buffer on `device` written by a
 * flat copy of x, AFTER(buf, STORE(buf, x.flatten())) viewed in x's shape. x must be a whole buffer (tinygrad:
 * has_buffer_identity), else it is made contiguous on its own device first. The copy kernel reads one device and
 * writes the other; sched_copy_calls turns it into a COPY call. A copy to x's own device is x; a copy of a value
 * without a device (a gradient made of constants) is that value, computed on the target when it is a root. */
static UOp *callify_copy(CallifyCtx *c, UOp *x, UOp *src, tg_status *st) {
  const char *to = x->arg.kind == ARG_STR ? x->arg.str : NULL, *from = sched_device(x->src[0]);
  if (!to) { *st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "COPY without a target device"); return NULL; }
  if (!from) /* a value without a device (a constant) is computed where it is needed: stored on `to` as a root */
    return uopmap_get(&c->realize_base, x) ? store_into_new_buffer(c, src, x, st) : src;
  if (strcmp(to, from) == 0) return src;
  Shape sh;
  if (uop_shape_cached(x, &c->shapes, &sh) != SHAPE_OK) { *st = TG_ERR_INVALID_ARGUMENT; return NULL; }
  int64_t numel = shape_numel(&sh);
  if (numel == 0) return src;
  if (!uop_has_buffer_identity(src, true)) {
    src = store_into_new_buffer(c, src, x->src[0], st); /* contiguous on the source's device */
    if (!src) return NULL;
  }
  UOp *buf = c->nb(to, dt_strong(x->dtype), numel, c->nbctx);
  if (!buf) { *st = tg_set_error(TG_ERR_OUT_OF_MEMORY, "schedule: could not create a buffer of %lld elements", (long long)numel); return NULL; }
  tg_vec_push(&c->res->new_buffers, uop_keep(buf));
  UOp *flat_src[2] = {src, shape_to_uop(&numel, 1)};
  UOp *flat = uop_new(TG_OP_RESHAPE, src->dtype, flat_src, 2, arg_none());
  UOp *ss[2] = {buf, flat};
  UOp *store = uop_new(TG_OP_STORE, DT_VOID, ss, 2, arg_none());
  UOp *view = buf;
  if (sh.ndim != 1) {
    UOp *vs[2] = {buf, shape_to_uop(sh.d, sh.ndim)};
    view = uop_new(TG_OP_RESHAPE, buf->dtype, vs, 2, arg_none());
  }
  UOp *as[2] = {view, store}; /* the copy's value in x's shape, after the flat store */
  UOp *after = uop_new(TG_OP_AFTER, buf->dtype, as, 2, arg_none());
  tg_vec_push(&c->assigns, after);
  tg_vec_push(&c->res->map_from, uop_keep(x));
  tg_vec_push(&c->res->map_to, uop_keep(view));
  return after;
}

static UOp *callify_node(CallifyCtx *c, UOp *x, tg_status *st) {
  UOp *y = rebuild(c, x);
  switch (uop_op(x)) {
  case TG_OP_DETACH: case TG_OP_CONTIGUOUS_BACKWARD: case TG_OP_CUSTOM_GRAD: return y->src[0];
  case TG_OP_CONTIGUOUS:
    /* a hinted copy (uop.h ContigHint) the device's renderer does not ask for is its source, as tinygrad's graph has
     * it (a root still gets its buffer below) */
    if (x->arg.kind == ARG_INT && !uopmap_get(&c->realize_base, x) &&
        !sched_device_wants_copy(sched_device(x), (int)x->arg.i))
      return y->src[0];
    if (y->src[0]->op == TG_OP_AFTER && uop_has_buffer_identity(y->src[0]->src[0], false)) {
      /* CONTIGUOUS of an assign into a buffer: the assign's storage already is contiguous; both map to it */
      tg_vec_push(&c->res->map_from, uop_keep(x));
      tg_vec_push(&c->res->map_to, uop_keep(assign_view(y->src[0])));
      return y->src[0];
    }
    if (is_virtual(x)) { *st = unsupported("CONTIGUOUS of a value without a device"); return NULL; }
    UOp *view = contiguous_view(c, y->src[0]);
    if (view) { /* a zero-copy view of the buffer: no kernel */
      tg_vec_push(&c->res->map_from, uop_keep(x));
      tg_vec_push(&c->res->map_to, uop_keep(view));
      return view;
    }
    return store_into_new_buffer(c, y->src[0], x, st);
  case TG_OP_AFTER: {
    if (uop_unbind(y, NULL, NULL)) return y; /* a call input (numbered with the buffers), not an assign */
    if (uop_is_variable(x->src[0])) { *st = unsupported("an AFTER of a Variable that is not a bind"); return NULL; }
    bool has_store = false;
    for (uint32_t k = 1; k < y->nsrc; k++) has_store |= y->src[k]->op == TG_OP_STORE;
    if (!has_store) { /* a view's new state after an assign into it (AFTER(view, AFTER(...))): kept and recorded */
      tg_vec_push(&c->assigns, y);
      tg_vec_push(&c->res->map_from, uop_keep(x));
      tg_vec_push(&c->res->map_to, uop_keep(assign_view(y)));
      return y;
    }
    if (y->nsrc != 2 || y->src[1]->op != TG_OP_STORE) { *st = unsupported("an AFTER with several stores"); return NULL; }
    UOp *target = sched_base(y->src[0]);
    while (target->op == TG_OP_BITCAST || target->op == TG_OP_AFTER || target->op == TG_OP_UNSHARD)
      target = sched_base(target->src[0]);
    if (target->op != TG_OP_BUFFER) return store_into_new_buffer(c, y->src[1]->src[1], x, st);
    tg_vec_push(&c->assigns, y);
    tg_vec_push(&c->res->map_from, uop_keep(x));
    tg_vec_push(&c->res->map_to, uop_keep(assign_view(y)));
    return y;
  }
  case TG_OP_COPY: return callify_copy(c, x, y->src[0], st);
  case TG_OP_FUNCTION: case TG_OP_CALL: *st = unsupported("FUNCTION/CALL in a tensor graph"); return NULL;
  case TG_OP_BUFFER: return y; /* a global buffer (numbered below) or an unbound Variable */
  default:
    if (uopmap_get(&c->realize_base, x)) {
      if (is_virtual(x)) { *st = unsupported("realizing a value without a device"); return NULL; }
      return store_into_new_buffer(c, y, x, st);
    }
    return y;
  }
}

/* Pre-order walk from the SINK numbering global BUFFERs and bound Variables (tinygrad's bottom-up pm_replace_buf). */
static void number_buffers(UOp *u, UOpMap *seen, UOpVec *bufs) {
  UOpVec stack = {0};
  tg_vec_push(&stack, u);
  while (stack.len) {
    UOp *x = stack.data[--stack.len];
    if (uopmap_get(seen, x)) continue;
    uopmap_put(seen, x, x);
    if (sched_is_global_buffer(x) || uop_unbind(x, NULL, NULL)) { tg_vec_push(bufs, x); continue; }
    for (uint32_t k = x->nsrc; k-- > 0;) tg_vec_push(&stack, x->src[k]);
  }
  tg_vec_free(&stack);
}

static UOp *param_for(UOp *buf, int64_t slot) {
  UOp *var;
  if (uop_unbind(buf, &var, NULL)) { /* the Variable's range without its value */
    ParamArg p = *var->arg.param;
    p.slot = slot;
    snprintf(p.name, sizeof p.name, "p%lld", (long long)slot);
    return uop_new(TG_OP_PARAM, var->dtype, NULL, 0, arg_param(&p));
  }
  ParamArg p = *buf->arg.param;
  p.slot = slot;
  UOp *size = buf->src[0];
  return uop_new(TG_OP_PARAM, buf->dtype, &size, 1, arg_param(&p));
}

tg_status sched_callify(UOp *sink, SchedNewBuffer nb, void *nbctx, CallifyResult *out) {
  memset(out, 0, sizeof *out);
  CallifyCtx c;
  memset(&c, 0, sizeof c);
  c.nb = nb;
  c.nbctx = nbctx;
  c.res = out;
  shape_cache_init(&c.shapes);
  uopmap_init(&c.done);
  uopmap_init(&c.realize_base);
  tg_status st = TG_OK;

  for (uint32_t i = 0; i < sink->nsrc; i++) {
    UOp *b = sched_base(sink->src[i]);
    if (is_virtual(b) || uop_has_buffer_identity(b, false) || b->op == TG_OP_AFTER) continue;
    if (b->op == TG_OP_BUFFER && b->arg.kind == ARG_PARAM && b->arg.param->addrspace == ADDR_ALU) continue;
    uopmap_put(&c.realize_base, b, b);
  }
  UOpVec topo = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  for (size_t i = 0; i < topo.len && st == TG_OK; i++) {
    UOp *x = topo.data[i];
    if (x->op == TG_OP_SINK) continue;
    UOp *y = callify_node(&c, x, &st);
    if (y) uopmap_put(&c.done, x, y);
  }
  tg_vec_free(&topo);
  if (st == TG_OK) {
    UOp *body = uop_sink(c.assigns.data, c.assigns.len);
    UOpMap seen;
    uopmap_init(&seen);
    UOpVec bufs = {0};
    number_buffers(body, &seen, &bufs);
    UOpVec params = {0};
    for (size_t i = 0; i < bufs.len; i++) {
      tg_vec_push(&params, param_for(bufs.data[i], (int64_t)i));
      tg_vec_push(&out->args, uop_keep(bufs.data[i]));
    }
    out->body = uop_keep(uop_substitute(body, bufs.data, params.data, bufs.len));
    tg_vec_free(&params);
    tg_vec_free(&bufs);
    uopmap_free(&seen);
  }
  tg_vec_free(&c.assigns);
  uopmap_free(&c.done);
  uopmap_free(&c.realize_base);
  shape_cache_free(&c.shapes);
  if (st != TG_OK) sched_callify_free(out);
  return st;
}

static void drop_all(UOpVec *v) {
  for (size_t i = 0; i < v->len; i++) uop_drop(v->data[i]);
  tg_vec_free(v);
}

void sched_callify_free(CallifyResult *r) {
  uop_drop(r->body);
  r->body = NULL;
  drop_all(&r->args);
  drop_all(&r->map_from);
  drop_all(&r->map_to);
  drop_all(&r->new_buffers);
}
