/* mixin.c — the build context of the graph builders (mixin.h), the shape and device queries they ask, constants
 * (tinygrad UOp.const and Python-number scalars), arange and contiguous.
 *
 * The context is one per thread of the library's use (the library is single-threaded at the API): begins nest, and
 * only the outermost opens the UOp scope and the memos, so a composite built from other builders shares them. */
#include "uop/mixin.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------- call context */

/* The one build context (the library's API is single-threaded): depth counts nested begins, the scope owns every
 * node built inside, and the memos remember shapes and devices of the nodes seen so far. */
static struct {
  int depth;
  const char *op;
  UOpScope scope;
  ShapeCache cache;
  UOpMap device; /* node -> its interned device name, or &no_device; seeded by the inputs */
} ctx;
static char no_device; /* the device memo's "none" */

/* Only the outermost begin opens the scope and the memos; an inner one (a public call used by another, a builder that
 * opens its own for a helper handle) joins them, so nodes built inside stay alive until the outermost end. */
void mix_ctx_begin(const char *op) {
  if (ctx.depth++ > 0) return;
  ctx.op = op;
  ctx.scope = uop_scope_begin();
  shape_cache_init(&ctx.cache);
  uopmap_init(&ctx.device);
}

const char *mix_ctx_op(void) { return ctx.op ? ctx.op : "tinygrad"; }

/* The outermost end frees every intermediate node: what survives is what a handle kept (tensor_ctx_end) or what the
 * caller's own scope holds. */
void mix_ctx_end(void) {
  if (--ctx.depth > 0) return;
  shape_cache_free(&ctx.cache);
  uopmap_free(&ctx.device);
  uop_scope_end(ctx.scope);
  ctx.op = NULL;
}

/* An input's shape and device are known from its handle: seeding them stops the memo walks there, so a query on a
 * node built from a huge input graph costs the new nodes only. */
void mix_ctx_seed(UOp *u, const SymShape *s, const char *device) {
  if (!ctx.depth) return;
  shape_cache_seed_sym(&ctx.cache, u, s);
  uopmap_put(&ctx.device, u, device ? (void *)device : (void *)&no_device);
}

/* Errors name the public op (the context's), then what is wrong; INVALID_ARGUMENT for bad input, UNSUPPORTED (with
 * the "tinygrad.c:" prefix) for what tinygrad does and this port does not yet. */
UOp *mix_err(const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: %s", mix_ctx_op(), msg);
  return NULL;
}

UOp *mix_err_unsupported(const char *what) {
  tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: %s: %s not supported yet", mix_ctx_op(), what);
  return NULL;
}

/* Shape queries through the context's cache (uop/shape.c rules); a node without a shape (a SINK, a void op) is an
 * error here, since every builder needs one. mix_shape refuses symbolic sizes for code that reads sizes as numbers. */
bool mix_shape_sym(UOp *u, SymShape *out) {
  if (!u) return false;
  ShapeResult r = uop_shape_sym_cached(u, &ctx.cache, out);
  if (r == SHAPE_OK) return true;
  if (r == SHAPE_NONE) mix_err("%s has no shape", uop_op_name(uop_op(u)));
  return false;
}

bool mix_shape(UOp *u, Shape *out) {
  if (!u) return false;
  SymShape ss;
  ShapeResult r = uop_shape_sym_cached(u, &ctx.cache, &ss);
  if (r == SHAPE_OK && shape_sym_is_symbolic(&ss)) {
    char b[200];
    tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: %s: symbolic shape %s not supported by this op yet", mix_ctx_op(),
                 shape_sym_fmt(&ss, b, sizeof b));
    return false;
  }
  *out = ss.max;
  if (r == SHAPE_OK) return true;
  if (r == SHAPE_NONE) mix_err("%s has no shape", uop_op_name(uop_op(u)));
  return false;
}

/* mix_shape_sym without the copy: the context cache's own entry, valid until the outermost mix_ctx_end. */
const SymShape *mix_shape_peek(UOp *u) {
  if (!u) return NULL;
  const SymShape *s;
  ShapeResult r = uop_shape_sym_peek(u, &ctx.cache, &s);
  if (r == SHAPE_OK) return s;
  if (r == SHAPE_NONE) mix_err("%s has no shape", uop_op_name(uop_op(u)));
  return NULL;
}

int mix_ndim(UOp *u) {
  const SymShape *s = mix_shape_peek(u);
  return s ? s->max.ndim : -1;
}

/* Device names live for the process: a handle's device is a pointer compare, and names never dangle. */
const char *mix_device_intern(const char *canonical) {
  static TG_VEC(char *) names;
  for (size_t i = 0; i < names.len; i++)
    if (strcmp(names.data[i], canonical) == 0) return names.data[i];
  tg_vec_push(&names, tg_strdup(canonical));
  return names.data[names.len - 1];
}

/* a node's own device: a global BUFFER's (a Variable has none), a COPY's target */
static const char *own_device(const UOp *n, bool *has_own) {
  *has_own = false;
  if (n->op == TG_OP_BUFFER && n->arg.kind == ARG_PARAM) {
    *has_own = true;
    return n->arg.param->device[0] ? mix_device_intern(n->arg.param->device) : NULL;
  }
  if (n->op == TG_OP_COPY && n->arg.kind == ARG_STR) {
    *has_own = true;
    return mix_device_intern(n->arg.str);
  }
  return NULL;
}

/* tinygrad's UOp.device (memoized per call, stopping at the inputs, whose devices mix_ctx_seed recorded) */
/* One node's device from its own and its sources' (memo holds every source) */
static const char *device_step(UOpMap *memo, const UOp *n) {
  bool has_own;
  const char *dev = own_device(n, &has_own);
  for (uint32_t k = 0; k < n->nsrc && !has_own && !dev; k++) {
    void **v = uopmap_get(memo, n->src[k]);
    if (v && *v != (void *)&no_device) dev = *v;
  }
  uopmap_put(memo, n, dev ? (void *)dev : (void *)&no_device);
  return dev;
}

static void device_visit(UOp *n, void *memo) { device_step(memo, n); }

/* One walk that stops at known nodes (the context's memo, seeded with the inputs' devices; outside a context a local
 * one over the whole graph), each new node's device from its sources'. */
const char *mix_device_name(UOp *u) {
  if (!u) return NULL;
  UOpMap local;
  UOpMap *memo = ctx.depth ? &ctx.device : &local;
  if (!ctx.depth) uopmap_init(&local);
  uopmap_fill(memo, u, uop_data_sources, device_visit, memo);
  void **v = uopmap_get(memo, u);
  const char *r = v && *v != (void *)&no_device ? *v : NULL;
  if (!ctx.depth) uopmap_free(&local);
  return r;
}

/* tinygrad's UOp.device is not None: some BUFFER below */
bool mix_has_device(UOp *u) {
  if (!u) return false;
  if (ctx.depth == 0) return uop_op_in_backward_slice_with_self(u, TG_OP_BUFFER);
  return mix_device_name(u) != NULL;
}

/* tinygrad _resolve_dim: negative axes count from the end; extra allows one past the last (unsqueeze, stack). */
bool mix_resolve_dim(UOp *u, int dim, bool extra, int *out) {
  int nd = mix_ndim(u);
  if (nd < 0) return false;
  int total = nd + (extra ? 1 : 0), lim = TG_MAX(1, total);
  if (dim < -lim || dim > lim - 1) {
    mix_err("dim=%d out of range [%d, %d]", dim, -lim, lim - 1);
    return false;
  }
  *out = dim < 0 ? dim + total : dim;
  return true;
}

const char *mix_fmt_shape(const Shape *s) {
  static char bufs[4][192];
  static int at;
  at = (at + 1) & 3;
  return shape_fmt(s, bufs[at], sizeof bufs[at]);
}

const char *mix_fmt_dims(const int64_t *d, int n) {
  Shape s;
  s.ndim = TG_MIN(n, TG_MAX_DIMS);
  for (int i = 0; i < s.ndim; i++) s.d[i] = d[i];
  return mix_fmt_shape(&s);
}

/* ---------------------------------------------------------------------------------------------------- constants */

static const DType *from_py(Const v) {
  switch (v.kind) {
  case CK_BOOL: case CK_INVALID: return DT_BOOL;
  case CK_INT: return DT_WEAKINT;
  default: return DT_WEAKFLOAT;
  }
}

UOp *mix_const(Const v, const DType *d) {
  if (!d || v.kind == CK_INVALID) d = from_py(v);
  return uop_const(d, v);
}

UOp *mix_weak_float(double v) { return mix_const(const_float(v), NULL); }
UOp *mix_weak_int(int64_t v) { return mix_const(const_int(v), NULL); }

UOp *mix_const_like(UOp *like, Const v, const DType *d) {
  Shape s;
  if (!mix_shape(like, &s)) return NULL;
  UOp *c = mix_const(v, d ? d : like->dtype);
  if (s.ndim == 0) return c;
  return mix_mop(c, TG_OP_EXPAND, s.d, NULL, s.ndim);
}

/* a double that a Python program would have written as an int literal (exactly representable) */
static bool is_integral(double v) { return isfinite(v) && v == floor(v) && fabs(v) < 9.007199254740992e15; }

Const mix_py_const(double v) { return is_integral(v) ? const_int((int64_t)v) : const_float(v); }
UOp *mix_py_scalar(double v) { return mix_const(mix_py_const(v), NULL); }

UOp *mix_full(const Shape *s, Const fill, const DType *dt) {
  int64_t ones[TG_MAX_DIMS];
  for (int i = 0; i < s->ndim; i++) ones[i] = 1;
  return mix_expand(mix_reshape(mix_const(fill, dt), ones, s->ndim), s->d, s->ndim);
}

/* tinygrad arange: full((n,), step).cumsum + (start - step), cast to dtype */
UOp *mix_arange(double start, double stop, double step, const DType *dtype) {
  bool ints = is_integral(start) && is_integral(stop) && is_integral(step);
  if (step == 0 || isnan(step) || isnan(start) || isnan(stop)) return mix_err("arange step must be nonzero and finite");
  if (!dtype) {
    dtype = ints ? dt_default_int() : dt_default_float();
    double lo = step > 0 ? start : stop - step, hi = step > 0 ? stop - step : start;
    if (dtype == dt_default_int() && (lo < -2147483648.0 || hi > 2147483647.0)) dtype = DT_INT64;
  }
  double n = ceil((stop - start) / step);
  if (n > (double)INT32_MAX * 64) return mix_err("arange of %g elements is too large", n);
  int64_t len = n > 0 ? (int64_t)n : 0;
  Shape s = {1, {len}};
  if (len <= 0) {
    s.d[0] = 0;
    return mix_full(&s, const_int(0), dtype);
  }
  UOp *steps = mix_full(&s, ints ? const_int((int64_t)step) : const_float(step), dtype);
  UOp *off = ints ? mix_weak_int((int64_t)(start - step)) : mix_weak_float(start - step);
  return mix_cast(mix_add(mix_cumalu(steps, 0, TG_OP_ADD), off), dtype);
}

/* tinygrad contiguous: a no-op on weak scalars, device-less values and plain buffers; otherwise a CONTIGUOUS node,
 * which the scheduler realizes into a buffer of its own. */
UOp *mix_contiguous(UOp *x) {
  if (!x) return NULL;
  if (dt_is_weak(x->dtype)) return x;
  if ((x->op == TG_OP_CONTIGUOUS && x->arg.kind == ARG_NONE) || !mix_has_device(x) || uop_has_buffer_identity(x, false))
    return x;
  return uop_alu1(TG_OP_CONTIGUOUS, x);
}

/* tinygrad contiguous_backward: nothing forward, the gradient made contiguous */
UOp *mix_contiguous_backward(UOp *x) { return x ? uop_new(TG_OP_CONTIGUOUS_BACKWARD, x->dtype, &x, 1, arg_none()) : NULL; }

/* A copy the scheduler makes only on devices whose renderer profits from it (uop.h ContigHint); else as contiguous. */
UOp *mix_contiguous_hint(UOp *x, ContigHint hint) {
  if (!x) return NULL;
  if (dt_is_weak(x->dtype) || x->op == TG_OP_CONTIGUOUS || !mix_has_device(x) || uop_has_buffer_identity(x, false))
    return x;
  return uop_new(TG_OP_CONTIGUOUS, x->dtype, &x, 1, arg_int(hint));
}
