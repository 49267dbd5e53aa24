/* tensor.c — tensor handles, scopes, the handle-level ends of a build context (uop/mixin.h), inspection, creation
 * (tinygrad CreationMixin and Tensor.__init__), realize, assign and copies to the host.
 *
 * Lifetimes: a handle holds one uop_keep on its node. It starts with one reference owned by the innermost open
 * tg_scope (or by the caller when none is open); tg_retain/tg_release add and drop references. */
#include "tensor/tensor.h"

#include <math.h>
#include <stdio.h>

#include "engine/engine.h"
#include "runtime/runtime.h"

/* ------------------------------------------------------------------------------------------------ live handles */

/* Every handle is on one doubly linked list: a realize rewrites the graphs of all live handles (tinygrad's
 * _apply_map_to_tensors walks Tensor._all_tensors the same way), and tg_live_tensors counts it for leak tests. */
static tg_tensor *live_head;
static size_t live_count;

/* The open tg_scopes, innermost last: each holds the handles created while it was the innermost one. */
typedef TG_VEC(tg_tensor *) HandleVec;
static TG_VEC(HandleVec) scopes;

/* A handle keeps its symbolic size expressions alive itself: the graph that produced them may be rewritten by a
 * realize, and the handle's shape must not change when it is. */
static void handle_set_shape(tg_tensor *t, const SymShape *s) {
  t->shape = s->max;
  for (int i = 0; i < s->max.ndim; i++) {
    t->sym[i] = s->sym[i] ? uop_keep(s->sym[i]) : NULL;
    t->symbolic |= s->sym[i] != NULL;
  }
}

/* t->sym past ndim is NULL (a handle is calloc'ed and only handle_set_shape writes sym), so both copy whole. */
SymShape tensor_handle_shape(const tg_tensor *t) {
  SymShape s;
  s.max = t->shape;
  memcpy(s.sym, t->sym, sizeof s.sym);
  return s;
}

/* The one constructor of user-visible handles: linked into the live list and owned by the innermost scope. */
static tg_tensor *handle_new_sym(UOp *u, const SymShape *s, const char *device) {
  tg_tensor *t = tg_calloc(1, sizeof *t);
  t->uop = uop_keep(u);
  handle_set_shape(t, s);
  t->rc = 1;
  t->device = device;
  t->next = live_head;
  if (live_head) live_head->prev = t;
  live_head = t;
  live_count++;
  if (scopes.len) tg_vec_push(&scopes.data[scopes.len - 1], t);
  return t;
}

tg_tensor *tensor_handle_known_sym(UOp *u, const SymShape *s, const char *device) { return handle_new_sym(u, s, device); }

tg_tensor *tensor_handle_known(UOp *u, const Shape *s, const char *device) {
  SymShape ss = shape_sym_from(s);
  return handle_new_sym(u, &ss, device);
}

/* Like handle_new_sym, but outside every scope and not counted: the RNG counters live for the process, and a
 * scope ending must not free them. */
tg_tensor *tensor_handle_internal(UOp *u) {
  SymShape s;
  if (!u || !mix_shape_sym(u, &s)) return NULL;
  tg_tensor *t = tg_calloc(1, sizeof *t);
  t->uop = uop_keep(u);
  handle_set_shape(t, &s);
  t->rc = 1;
  t->device = mix_device_name(u);
  t->internal = true;
  t->next = live_head;
  if (live_head) live_head->prev = t;
  live_head = t;
  return t;
}

/* Dropping the node may free a large graph: a scope of its own collects the nodes that die with it. */
static void handle_free(tg_tensor *t) {
  if (t->grad) tg_release(t->grad);
  if (t->prev) t->prev->next = t->next;
  else live_head = t->next;
  if (t->next) t->next->prev = t->prev;
  if (!t->internal) live_count--;
  UOpScope s = uop_scope_begin();
  uop_drop(t->uop);
  for (int i = 0; i < t->shape.ndim; i++)
    if (t->sym[i]) uop_drop(t->sym[i]);
  uop_scope_end(s);
  tg_free(t);
}

tg_tensor *tg_retain(tg_tensor *t) {
  if (t) t->rc++;
  return t;
}

void tg_release(tg_tensor *t) {
  if (t && --t->rc == 0) handle_free(t);
}

void tg_release_many(tg_tensor *const *ts, size_t n) {
  for (size_t i = 0; ts && i < n; i++) tg_release(ts[i]);
}

tg_scope tg_scope_begin(void) {
  HandleVec empty = {0};
  tg_vec_push(&scopes, empty);
  return scopes.len - 1;
}

void tg_scope_end(tg_scope s) {
  while (scopes.len > s) {
    HandleVec *v = &scopes.data[scopes.len - 1];
    for (size_t i = v->len; i-- > 0;) tg_release(v->data[i]);
    tg_vec_free(v);
    scopes.len--;
  }
}

/* Moves t from the innermost scope to the enclosing one (or to the caller when there is none): the C spelling of
 * returning a value out of a block whose temporaries are freed. */
tg_tensor *tg_scope_keep(tg_tensor *t) {
  if (!t || !scopes.len) return t;
  HandleVec *v = &scopes.data[scopes.len - 1];
  for (size_t i = v->len; i-- > 0;) {
    if (v->data[i] != t) continue;
    memmove(v->data + i, v->data + i + 1, (v->len - i - 1) * sizeof *v->data);
    v->len--;
    if (scopes.len >= 2) tg_vec_push(&scopes.data[scopes.len - 2], t);
    break;
  }
  return t;
}

size_t tg_live_tensors(void) { return live_count; }

/* ------------------------------------------------------------------------------------------ calls on handles */

tg_tensor *tensor_ctx_end(UOp *result) {
  tg_tensor *t = NULL;
  SymShape s;
  if (result && mix_shape_sym(result, &s)) t = handle_new_sym(result, &s, mix_device_name(result));
  mix_ctx_end();
  return t;
}

tg_tensor *tensor_ctx_end_owned(UOp *result) {
  size_t before = scopes.len ? scopes.data[scopes.len - 1].len : 0;
  tg_tensor *t = tensor_ctx_end(result);
  if (t && scopes.len && scopes.data[scopes.len - 1].len > before) scopes.data[scopes.len - 1].len--;
  return t;
}

tg_tensor *tensor_live_first(void) { return live_head; }

UOp *tensor_in(const tg_tensor *t, int i) {
  if (!t) {
    /* keep the first error: a NULL that came out of a failed call already has its message */
    if (tg_last_status() == TG_OK) mix_err("argument %d is NULL", i);
    return NULL;
  }
  SymShape ts = tensor_handle_shape(t);
  mix_ctx_seed(t->uop, &ts, t->device);
  return t->uop;
}

/* --------------------------------------------------------------------------------------------------- inspection */

/* The queries read the handle's cached shape: no graph walk, and a NULL handle answers -1 / NULL so a chain of calls
 * that failed early can still be inspected safely. */
int tg_ndim(const tg_tensor *t) { return t ? t->shape.ndim : -1; }
const int64_t *tg_shape(const tg_tensor *t) { return t ? t->shape.d : NULL; }
int64_t tg_numel(const tg_tensor *t) { return t ? shape_numel(&t->shape) : -1; }
tg_dtype tg_get_dtype(const tg_tensor *t) { return t ? t->uop->dtype->id : TG_VOID; }
const char *tg_device(const tg_tensor *t) { return t ? t->device : NULL; }

int64_t tg_size(const tg_tensor *t, int axis) {
  if (!t) return -1;
  int nd = t->shape.ndim;
  if (axis < -nd || axis >= nd) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_size: dim=%d out of range for %d dims", axis, nd);
    return -1;
  }
  return t->shape.d[axis < 0 ? axis + nd : axis];
}

const char *tg_dtype_name(tg_dtype d) { return (unsigned)d < TG_DTYPE_COUNT ? tg_dtype_table[d].name : "?"; }
size_t tg_dtype_itemsize(tg_dtype d) {
  if ((unsigned)d >= TG_DTYPE_COUNT || d == TG_VOID || dt_is_weak(&tg_dtype_table[d])) return 0;
  return (size_t)dt_itemsize(&tg_dtype_table[d]);
}

char *tg_graph_str(const tg_tensor *t) { return t ? uop_str(t->uop) : NULL; }
void tg_str_free(char *s) { tg_free(s); }

/* A user dtype argument: TG_VOID means `dflt`; out-of-range ids are errors. */
static bool user_dtype(tg_dtype d, const DType *dflt, const DType **out) {
  if ((unsigned)d >= TG_DTYPE_COUNT) {
    mix_err("unknown dtype %d", (int)d);
    return false;
  }
  *out = d == TG_VOID ? dflt : &tg_dtype_table[d];
  return true;
}

/* A user shape argument: at most TG_MAX_DIMS sizes, none negative (0 is a valid, empty size). */
static bool check_shape_arg(const int64_t *shape, size_t ndim, Shape *out) {
  if (ndim > TG_MAX_DIMS) {
    mix_err("%zu dims, at most %d supported", ndim, TG_MAX_DIMS);
    return false;
  }
  if (ndim && !shape) {
    mix_err("shape is NULL with ndim %zu", ndim);
    return false;
  }
  out->ndim = (int)ndim;
  for (size_t i = 0; i < ndim; i++) {
    if (shape[i] < 0) {
      mix_err("negative size in shape %s", mix_fmt_dims(shape, (int)ndim));
      return false;
    }
    out->d[i] = shape[i];
  }
  return true;
}

/* ----------------------------------------------------------------------------------------------------- creation */

/* tinygrad Tensor.empty: new_buffer(size).reshape(shape), on `device` (NULL: the default) */
static UOp *t_empty_on(const Shape *s, const DType *dt, const char *device) {
  if (dt_is_weak(dt) || dt == DT_VOID) return mix_err("cannot create storage for weak dtype %s", dt->name);
  UOp *buf = engine_new_buffer(device ? device : tg_default_device(), dt, shape_numel(s));
  if (!buf) return NULL;
  return mix_reshape(buf, s->d, s->ndim);
}
static UOp *t_empty(const Shape *s, const DType *dt) { return t_empty_on(s, dt, NULL); }

/* tinygrad Tensor.full(buffer=True): the constant (mix_full) stored into a new buffer; dt NULL: fill's own kind */
static UOp *t_full_buffer(const Shape *s, Const fill, const DType *dt, bool explicit_dtype) {
  UOp *val = mix_full(s, fill, dt);
  if (!val) return NULL;
  UOp *ret = t_empty(s, explicit_dtype ? dt : dt_strong(val->dtype));
  if (!ret) return NULL;
  UOp *st[2] = {ret, val};
  UOp *store = uop_new(TG_OP_STORE, DT_VOID, st, 2, arg_none());
  UOp *af[2] = {ret, store};
  return uop_new(TG_OP_AFTER, NULL, af, 2, arg_none());
}

tg_tensor *tg_empty_sym(const tg_sint *shape, size_t ndim, tg_dtype dtype) {
  mix_ctx_begin("tg_empty_sym");
  SymShape s;
  const DType *dt;
  bool ok = tensor_sym_shape_arg(shape, ndim, false, &s) && user_dtype(dtype, dt_default_float(), &dt);
  return tensor_ctx_end(ok ? tensor_empty_sym(&s, dt) : NULL);
}

tg_tensor *tg_empty(const int64_t *shape, size_t ndim, tg_dtype dtype) { return tg_empty_on(shape, ndim, dtype, NULL); }

tg_tensor *tg_empty_on(const int64_t *shape, size_t ndim, tg_dtype dtype, const char *device) {
  mix_ctx_begin("tg_empty");
  Shape s;
  const DType *dt;
  UOp *r = check_shape_arg(shape, ndim, &s) && user_dtype(dtype, dt_default_float(), &dt) ? t_empty_on(&s, dt, device) : NULL;
  return tensor_ctx_end(r);
}

/* tinygrad Tensor.to: the same value when it is on `device` already (or has no device), else COPY(x, device). */
tg_tensor *tg_to(const tg_tensor *t, const char *device) {
  mix_ctx_begin("tg_to");
  UOp *x = tensor_in(t, 1), *r = NULL;
  char canon[TG_NAME_MAX];
  if (x && !device) r = mix_err("device is NULL");
  else if (x && !rt_device_canonical(device, canon, sizeof canon)) r = NULL;
  else if (x && (!t->device || strcmp(t->device, canon) == 0)) r = x;
  else if (x && dt_is_weak(x->dtype)) r = mix_err("cannot copy a weak dtype (%s) to %s", x->dtype->name, canon);
  else if (x) r = uop_new(TG_OP_COPY, x->dtype, &x, 1, arg_str(canon));
  return tensor_ctx_end(r);
}

/* tg_full and friends realize into a buffer (tinygrad's full(..., buffer=True) path of zeros/ones): the result is
 * storage that can be assigned into, not a broadcast constant that every reader recomputes. */
static tg_tensor *full_common(const char *op, const int64_t *shape, size_t ndim, Const fill, tg_dtype dtype) {
  mix_ctx_begin(op);
  Shape s;
  const DType *dt;
  UOp *r = NULL;
  if (check_shape_arg(shape, ndim, &s) && user_dtype(dtype, NULL, &dt))
    r = t_full_buffer(&s, fill, dt, dt != NULL);
  return tensor_ctx_end(r);
}

tg_tensor *tg_full(const int64_t *shape, size_t ndim, double value, tg_dtype dtype) {
  return full_common("tg_full", shape, ndim, const_float(value), dtype);
}
tg_tensor *tg_full_int(const int64_t *shape, size_t ndim, int64_t value, tg_dtype dtype) {
  return full_common("tg_full_int", shape, ndim, const_int(value), dtype);
}
tg_tensor *tg_zeros(const int64_t *shape, size_t ndim, tg_dtype dtype) {
  return full_common("tg_zeros", shape, ndim, const_float(0.0), dtype);
}
tg_tensor *tg_ones(const int64_t *shape, size_t ndim, tg_dtype dtype) {
  return full_common("tg_ones", shape, ndim, const_float(1.0), dtype);
}

/* *_like: t's shape and (TG_VOID) dtype; empty_like of a weak scalar gets the strong dtype it would be stored as. */
static tg_tensor *like_common(const char *op, const tg_tensor *t, Const fill, tg_dtype dtype, bool empty) {
  mix_ctx_begin(op);
  UOp *x = tensor_in(t, 1), *r = NULL;
  const DType *dt;
  if (x && user_dtype(dtype, x->dtype, &dt))
    r = empty ? t_empty(&t->shape, dtype == TG_VOID ? dt_strong(dt) : dt) : t_full_buffer(&t->shape, fill, dt, true);
  return tensor_ctx_end(r);
}

tg_tensor *tg_full_like(const tg_tensor *t, double value, tg_dtype dtype) {
  return like_common("tg_full_like", t, const_float(value), dtype, false);
}
tg_tensor *tg_zeros_like(const tg_tensor *t, tg_dtype dtype) { return like_common("tg_zeros_like", t, const_int(0), dtype, false); }
tg_tensor *tg_ones_like(const tg_tensor *t, tg_dtype dtype) { return like_common("tg_ones_like", t, const_int(1), dtype, false); }
tg_tensor *tg_empty_like(const tg_tensor *t, tg_dtype dtype) { return like_common("tg_empty_like", t, const_int(0), dtype, true); }

tg_tensor *tg_from_data(const void *data, tg_dtype dtype, const int64_t *shape, size_t ndim) {
  return tg_from_data_on(data, dtype, shape, ndim, NULL);
}

/* Host data is copied into a new device buffer at once (tinygrad's Tensor(np.array) realizes too): the caller may
 * free or reuse `data` as soon as the call returns. */
tg_tensor *tg_from_data_on(const void *data, tg_dtype dtype, const int64_t *shape, size_t ndim, const char *device) {
  mix_ctx_begin("tg_from_data");
  Shape s;
  const DType *dt;
  UOp *r = NULL;
  if (check_shape_arg(shape, ndim, &s) && user_dtype(dtype, dt_default_float(), &dt)) {
    if (dt_is_weak(dt) || dt == DT_VOID) r = mix_err("cannot create storage for weak dtype %s", dt->name);
    else if (!data && shape_numel(&s) > 0) r = mix_err("data is NULL");
    else {
      UOp *buf = engine_buffer_from_host(device ? device : tg_default_device(), dt, shape_numel(&s), data);
      r = buf ? mix_reshape(buf, s.d, s.ndim) : NULL;
    }
  }
  return tensor_ctx_end(r);
}

tg_tensor *tg_from_floats(const float *data, const int64_t *shape, size_t ndim) {
  return tg_from_data(data, TG_FLOAT32, shape, ndim);
}

/* Python scalars: weak CONSTs with no device, which take the dtype of whatever they are combined with. */
static tg_tensor *const_handle(const char *op, Const v, const DType *d) {
  mix_ctx_begin(op);
  return tensor_ctx_end(mix_const(v, d));
}
tg_tensor *tg_const_float(double v) { return const_handle("tg_const_float", const_float(v), NULL); }
tg_tensor *tg_const_int(int64_t v) { return const_handle("tg_const_int", const_int(v), NULL); }
tg_tensor *tg_const_bool(bool v) { return const_handle("tg_const_bool", const_bool(v), NULL); }

/* A scalar with an explicit strong dtype (tinygrad's Tensor(3.0, dtype=...)): still a CONST, so it stays device-less. */
tg_tensor *tg_scalar(double v, tg_dtype dtype) {
  mix_ctx_begin("tg_scalar");
  const DType *dt;
  UOp *r = NULL;
  if (user_dtype(dtype, dt_default_float(), &dt)) {
    if (dt == DT_VOID) r = mix_err("void dtype");
    else r = mix_const(dt_is_float(dt) ? const_float(v) : dt_is_bool(dt) ? const_bool(v != 0) : const_int((int64_t)v), dt);
  }
  return tensor_ctx_end(r);
}

/* ---------------------------------------------------------------------------------------------------- Variables
 * The seed's form: a Variable is a 0-d BUFFER in the ALU address space (no device), bound = AFTER(var, STORE(var,
 * CONST)); both are plain handles, so scopes, lifetimes and arithmetic work as for any weak int scalar. */

tg_tensor *tg_variable(const char *name, int64_t min, int64_t max) {
  mix_ctx_begin("tg_variable");
  UOp *r = NULL;
  if (!name || !name[0]) r = mix_err("a Variable needs a name");
  else if (strlen(name) >= TG_NAME_MAX) r = mix_err("Variable name '%.16s...' is longer than %d characters", name, TG_NAME_MAX - 1);
  else if (min > max) r = mix_err("Variable %s: empty range [%lld, %lld]", name, (long long)min, (long long)max);
  else r = uop_variable(name, min, max, NULL);
  return tensor_ctx_end(r);
}

/* A Variable and its bind are 0-d and device-less by construction: the handle needs no shape or device walk (a loop
 * re-binding a Variable every step pays for a node, not a graph search). */
static tg_tensor *tctx_end_scalar(UOp *result) {
  SymShape s;
  memset(&s, 0, sizeof s);
  tg_tensor *t = result ? handle_new_sym(result, &s, NULL) : NULL;
  mix_ctx_end();
  return t;
}

tg_tensor *tg_bind(const tg_tensor *var, int64_t value) {
  mix_ctx_begin("tg_bind");
  UOp *v = var ? var->uop : tensor_in(var, 1), *r = NULL;
  UOp *bound_var;
  if (v && uop_unbind(v, &bound_var, NULL)) r = mix_err("Variable %s is already bound", bound_var->arg.param->name);
  else if (v && !uop_is_variable(v)) r = mix_err("a tensor of dtype %s is not a Variable", v->dtype->name);
  else if (v) {
    const ParamArg *p = v->arg.param;
    if ((i128)value < p->vmin || (i128)value > p->vmax)
      r = mix_err("bind %lld not in range [%lld, %lld] of Variable %s", (long long)value, (long long)p->vmin,
               (long long)p->vmax, p->name);
    else r = uop_bind(v, value);
  }
  return tctx_end_scalar(r);
}

bool tg_is_variable(const tg_tensor *t) { return t && (uop_is_variable(t->uop) || uop_unbind(t->uop, NULL, NULL)); }

const char *tg_variable_name(const tg_tensor *t) {
  if (!tg_is_variable(t)) return NULL;
  return (uop_is_variable(t->uop) ? t->uop : t->uop->src[0])->arg.param->name;
}

tg_status tg_variable_value(const tg_tensor *t, int64_t *value) {
  if (!t) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_variable_value: argument 1 is NULL");
    return tg_last_status();
  }
  int64_t v;
  if (uop_unbind(t->uop, NULL, &v)) {
    if (value) *value = v;
    return TG_OK;
  }
  if (uop_is_variable(t->uop))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_variable_value: Variable %s is not bound", t->uop->arg.param->name);
  return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_variable_value: a tensor of dtype %s is not a Variable",
                      t->uop->dtype->name);
}



/* Creation from ranges: the builders (uop/mixin.c) build tinygrad's graphs; these wrappers only check the dtype. */
tg_tensor *tg_arange(double start, double stop, double step, tg_dtype dtype) {
  mix_ctx_begin("tg_arange");
  const DType *dt;
  UOp *r = user_dtype(dtype, NULL, &dt) ? mix_arange(start, stop, step, dt) : NULL;
  return tensor_ctx_end(r);
}

/* tinygrad linspace: start + arange(steps) * (stop-start)/(steps-1), computed in the default float then cast. */
tg_tensor *tg_linspace(double start, double stop, int64_t steps, tg_dtype dtype) {
  mix_ctx_begin("tg_linspace");
  const DType *dt;
  UOp *r = NULL;
  if (!user_dtype(dtype, dt_default_float(), &dt)) return tensor_ctx_end(NULL);
  if (steps < 0) r = mix_err("number of steps must be non-negative, got %lld", (long long)steps);
  else if (dt == DT_BOOL) r = mix_err("linspace with bool dtype is not supported");
  else if (steps == 1) {
    Shape s = {1, {1}};
    r = mix_full(&s, mix_py_const(start), dt);
  } else {
    UOp *ar = mix_arange(0, (double)steps, 1, dt_default_float());
    UOp *scaled = mix_mul(ar, mix_weak_float((stop - start) / (double)(steps - 1)));
    r = mix_cast(mix_add(mix_py_scalar(start), scaled), dt);
  }
  return tensor_ctx_end(r);
}

/* tinygrad eye: arange(n)[:, None] == arange(m), cast: one fused kernel, no scatter. */
tg_tensor *tg_eye(int64_t n, int64_t m, tg_dtype dtype) {
  mix_ctx_begin("tg_eye");
  const DType *dt;
  UOp *r = NULL;
  if (m < 0) m = n;
  if (!user_dtype(dtype, dt_default_float(), &dt)) return tensor_ctx_end(NULL);
  if (n < 0) r = mix_err("cannot have negative n=%lld", (long long)n);
  else r = mix_cast(mix_eq(mix_unsqueeze(mix_arange(0, (double)n, 1, NULL), -1), mix_arange(0, (double)m, 1, NULL)), dt);
  return tensor_ctx_end(r);
}

/* ---------------------------------------------------------------------------------------------- realize / data */

/* Every live handle's graph with the nodes of `repl` (UOp -> UOp) replaced: tinygrad's _apply_map_to_tensors. One
 * post-order walk per handle with a memo shared across handles, so the cost is the size of the live graphs. */
/* Not walked below: a node already rebuilt for an earlier handle (its sources were too), and a node the map replaces
 * (what it becomes does not depend on its sources: the realized root's whole graph is not walked). */
typedef struct WalkGate { UOpMap *memo, *repl; } WalkGate;
static bool not_yet_rebuilt(const UOp *u, void *ctx) {
  WalkGate *g = ctx;
  return uopmap_get(g->memo, u) == NULL && uopmap_get(g->repl, u) == NULL;
}

static void apply_map_to_handles(UOpMap *repl) {
  UOpMap memo;
  uopmap_init(&memo);
  WalkGate gate = {&memo, repl};
  for (tg_tensor *h = live_head; h; h = h->next) {
    UOpVec order = {0};
    uop_toposort(h->uop, not_yet_rebuilt, &gate, &order);
    for (size_t i = 0; i < order.len; i++) {
      UOp *u = order.data[i];
      if (uopmap_get(&memo, u)) continue;
      void **r = uopmap_get(repl, u);
      UOp *nu = r ? *r : u;
      if (!r && u->nsrc) {
        UOp *stack_src[8], **src = u->nsrc <= 8 ? stack_src : tg_malloc(u->nsrc * sizeof *src);
        bool changed = false;
        for (uint32_t k = 0; k < u->nsrc; k++) {
          void **m = uopmap_get(&memo, u->src[k]);
          src[k] = m ? *m : u->src[k];
          changed = changed || src[k] != u->src[k];
        }
        if (changed) nu = uop_replace_src(u, src, u->nsrc);
        if (src != stack_src) tg_free(src);
      }
      uopmap_put(&memo, u, nu);
    }
    void **m = uopmap_get(&memo, h->uop);
    UOp *nu = m ? *m : h->uop;
    tg_vec_free(&order);
    if (nu == h->uop) continue;
    uop_keep(nu);
    uop_drop(h->uop);
    h->uop = nu;
  }
  uopmap_free(&memo);
}

/* One replacement from -> to in every live handle (a realized value standing for the graph that computed it). */
static void retarget_handles(UOp *from, UOp *to) {
  UOpMap repl;
  uopmap_init(&repl);
  uopmap_put(&repl, from, to);
  UOpScope s = uop_scope_begin();
  apply_map_to_handles(&repl);
  uop_scope_end(s);
  uopmap_free(&repl);
}

/* Realize the roots together (one schedule, shared subgraphs computed once), then make every live handle that
 * reads a root read its buffer instead, so the next realize does not recompute it. */
static tg_status realize_uops(UOp **roots, size_t n) {
  UOp **out = tg_calloc(n ? n : 1, sizeof *out);
  UOpMap repl;
  uopmap_init(&repl);
  /* every assign that ran is replaced by its buffer in all live handles, so its store never runs twice */
  tg_status st = engine_realize_assigns(roots, n, out, &repl);
  if (st == TG_OK) {
    for (size_t i = 0; i < n; i++)
      if (out[i] && out[i] != roots[i]) uopmap_put(&repl, roots[i], out[i]);
    apply_map_to_handles(&repl);
  }
  uopmap_free(&repl);
  tg_free(out);
  return st;
}

/* tinygrad Tensor.realize(*lst): the roots that need computing go to the engine in one call. */
tg_status tg_realize_many(tg_tensor *const *ts, size_t n) {
  mix_ctx_begin("tg_realize");
  UOp **roots = tg_calloc(n ? n : 1, sizeof *roots);
  size_t k = 0;
  tg_status st = TG_OK;
  for (size_t i = 0; i < n; i++) {
    UOp *u = tensor_in(ts ? ts[i] : NULL, (int)i + 1);
    if (!u) { st = tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_INVALID_ARGUMENT; break; }
    /* virtual values (no device, or weak) and plain buffers have nothing to compute */
    if (!ts[i]->device || dt_is_weak(u->dtype) || uop_has_buffer_identity(u, false)) continue;
    roots[k++] = u;
  }
  if (st == TG_OK && k) st = realize_uops(roots, k);
  tg_free(roots);
  mix_ctx_end();
  return st;
}

tg_status tg_realize(tg_tensor *t) { return tg_realize_many(&t, 1); }


tg_tensor *tg_contiguous(const tg_tensor *t) {
  mix_ctx_begin("tg_contiguous");
  return tensor_ctx_end(mix_contiguous(tensor_in(t, 1)));
}

/* a device-less value gets a buffer on the default device: tinygrad's clone() (empty_like + AFTER(STORE)) */
static UOp *clone_to_default(UOp *x) {
  Shape s;
  if (!mix_shape(x, &s)) return NULL;
  UOp *ret = t_empty(&s, dt_strong(x->dtype));
  if (!ret) return NULL;
  UOp *st[2] = {ret, mix_cast(x, ret->dtype)};
  UOp *store = uop_new(TG_OP_STORE, DT_VOID, st, 2, arg_none());
  UOp *af[2] = {ret, store};
  return uop_new(TG_OP_AFTER, NULL, af, 2, arg_none());
}

UOp *tensor_clone(UOp *x) { return x ? clone_to_default(x) : NULL; }

/* Copy out a realized value: a BUFFER, or a contiguous range of one (tinygrad's buffer view: SHRINK of a 1-d BUFFER).
 * The range case copies the whole buffer and picks the bytes: simple, and views read this way are small. */
static tg_status copyout_view(UOp *v, void *out, size_t nbytes) {
  if (v && v->op == TG_OP_BUFFER) return engine_copyout(v, out, nbytes);
  Shape off, sz, full;
  if (v && v->op == TG_OP_SHRINK && v->src[0]->op == TG_OP_BUFFER && v->dtype == v->src[0]->dtype &&
      uop_marg_pair(v, &off, &sz) && off.ndim == 1 && uop_as_shape(v->src[0]->src[0], &full) && full.ndim == 1) {
    size_t isz = (size_t)dt_itemsize(v->dtype), total = (size_t)full.d[0] * isz;
    if ((size_t)sz.d[0] * isz != nbytes) return mix_err("view of %lld elements for %zu bytes", (long long)sz.d[0], nbytes), TG_ERR_INVALID_ARGUMENT;
    unsigned char *tmp = tg_malloc(total ? total : 1);
    tg_status st = engine_copyout(v->src[0], tmp, total);
    if (st == TG_OK) memcpy(out, tmp + (size_t)off.d[0] * isz, nbytes);
    tg_free(tmp);
    return st;
  }
  mix_err_unsupported("copying out this view of a buffer");
  return TG_ERR_UNSUPPORTED;
}

/* tinygrad .numpy()/.data(): the value made contiguous and realized (its assigns run once), then copied out. When t
 * needed no cast, t itself is retargeted to the realized buffer, so reading a tensor twice computes it once. */
tg_status tg_to_host(tg_tensor *t, void *out, size_t nbytes) {
  mix_ctx_begin("tg_to_host");
  UOp *x = tensor_in(t, 1);
  tg_status st = TG_OK;
  if (!x) { st = tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_INVALID_ARGUMENT; goto done; }
  if (engine_capturing()) { /* tinygrad: .item()/.numpy() in a TinyJit capture raise: the value would be baked in */
    st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_to_host: reading a value during JIT capture is not allowed (it would be baked in)");
    goto done;
  }
  if (t->symbolic) { /* tinygrad: a symbolic shape cannot be read either */
    SymShape ss = tensor_handle_shape(t);
    char b[200];
    st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_to_host: symbolic shape %s: shrink it to concrete sizes first",
                      shape_sym_fmt(&ss, b, sizeof b));
    goto done;
  }
  if (dt_is_weak(x->dtype)) x = mix_cast(x, dt_strong(x->dtype));
  size_t need = (size_t)shape_numel(&t->shape) * (size_t)dt_itemsize(x->dtype);
  if (nbytes != need) {
    mix_err("buffer of %zu bytes for %s %s needs %zu", nbytes, mix_fmt_shape(&t->shape), x->dtype->name, need);
    st = TG_ERR_INVALID_ARGUMENT;
    goto done;
  }
  if (need == 0) goto done;
  if (!out) { mix_err("out is NULL"); st = TG_ERR_INVALID_ARGUMENT; goto done; }
  bool same_value = x == t->uop; /* no cast was needed: the realized buffer can stand for t from now on */
  x = mix_has_device(x) ? mix_contiguous(x) : clone_to_default(x);
  if (!x) { st = tg_last_status(); goto done; }
  UOp *buf = x;
  if (!uop_has_buffer_identity(x, false)) {
    UOp *res = NULL;
    UOpMap assigned;
    uopmap_init(&assigned);
    st = engine_realize_assigns(&x, 1, &res, &assigned);
    if (st == TG_OK && same_value && res && !uop_has_buffer_identity(t->uop, false)) retarget_handles(t->uop, res);
    if (st == TG_OK && assigned.len) apply_map_to_handles(&assigned); /* the assigns that ran never run again */
    uopmap_free(&assigned);
    if (st != TG_OK) goto done;
    buf = res;
  }
  while (buf && (buf->op == TG_OP_RESHAPE || buf->op == TG_OP_AFTER)) buf = buf->src[0];
  st = copyout_view(buf, out, nbytes);
done:
  mix_ctx_end();
  return st;
}

/* One element of dtype d as a double (.item()); 64-bit integers lose precision here, tg_item_int64 reads them whole. */
static double host_value_as_double(const unsigned char *p, const DType *d) {
  switch (d->id) {
  case TG_BOOL: return *(const bool *)p;
  case TG_INT8: return *(const int8_t *)p;
  case TG_UINT8: return *(const uint8_t *)p;
  case TG_INT16: return *(const int16_t *)p;
  case TG_UINT16: return *(const uint16_t *)p;
  case TG_INT32: return *(const int32_t *)p;
  case TG_UINT32: return *(const uint32_t *)p;
  case TG_INT64: return (double)*(const int64_t *)p;
  case TG_UINT64: return (double)*(const uint64_t *)p;
  case TG_FLOAT16: return tg_half_bits_to_float(*(const uint16_t *)p);
  case TG_BFLOAT16: return tg_bf16_bits_to_float(*(const uint16_t *)p);
  case TG_FP8E4M3: case TG_FP8E5M2: case TG_FP8E4M3FNUZ: case TG_FP8E5M2FNUZ: return tg_fp8_bits_to_float(*p, d->id);
  case TG_FLOAT32: return *(const float *)p;
  case TG_FLOAT64: return *(const double *)p;
  default: return NAN;
  }
}

static tg_status item_bytes(tg_tensor *t, unsigned char out[16], const DType **dt) {
  if (!t) {
    if (tg_last_status() == TG_OK) tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_item: argument 1 is NULL");
    return tg_last_status();
  }
  if (t->symbolic || shape_numel(&t->shape) != 1) {
    SymShape ss = tensor_handle_shape(t);
    char b[200];
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_item: must have one element, shape is %s",
                        shape_sym_fmt(&ss, b, sizeof b));
  }
  *dt = dt_strong(t->uop->dtype);
  return tg_to_host(t, out, (size_t)dt_itemsize(*dt));
}

tg_status tg_item_double(tg_tensor *t, double *out) {
  unsigned char b[16] = {0};
  const DType *dt = NULL;
  tg_status st = item_bytes(t, b, &dt);
  if (st == TG_OK && out) *out = host_value_as_double(b, dt);
  return st;
}

tg_status tg_item_int64(tg_tensor *t, int64_t *out) {
  unsigned char b[16] = {0};
  const DType *dt = NULL;
  tg_status st = item_bytes(t, b, &dt);
  if (st != TG_OK || !out) return st;
  switch (dt->id) {
  case TG_INT64: memcpy(out, b, 8); break;
  case TG_UINT64: { uint64_t v; memcpy(&v, b, 8); *out = (int64_t)v; break; }
  default: *out = (int64_t)host_value_as_double(b, dt); break;
  }
  return st;
}

/* ------------------------------------------------------------------------------------------------------- assign */

/* The assign node is AFTER(dst, STORE(dst, src)): readers of dst see the value after the store, and the store itself
 * runs with the next realize that needs dst. */
static UOp *assign_of(UOp *dst, UOp *src) {
  UOp *ss[2] = {dst, src};
  UOp *store = uop_new(TG_OP_STORE, DT_VOID, ss, 2, arg_none());
  UOp *as[2] = {dst, store};
  return uop_new(TG_OP_AFTER, NULL, as, 2, arg_none());
}

void tensor_assign_node(tg_tensor *t, UOp *src) {
  UOp *assign = uop_keep(assign_of(t->uop, src));
  uop_drop(t->uop);
  t->uop = assign;
}

/* tinygrad Tensor.assign: x is broadcast and (weak) cast to t's shape and dtype. Assigning into a view of a buffer
 * rewrites the buffer itself, in every live handle, to AFTER(buffer, assign): tensors that read other parts of the
 * buffer then see the write too, as they do in tinygrad. */
tg_status tg_assign(tg_tensor *t, const tg_tensor *x) {
  mix_ctx_begin("tg_assign");
  UOp *dst = tensor_in(t, 1), *src = tensor_in(x, 2);
  tg_status st = TG_OK;
  if (!dst || !src) { st = tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_INVALID_ARGUMENT; goto done; }
  if (dt_is_weak(dst->dtype) || !t->device) {
    mix_err("cannot assign into a tensor without storage (%s, dtype %s)", mix_fmt_shape(&t->shape), dst->dtype->name);
    st = TG_ERR_INVALID_ARGUMENT;
    goto done;
  }
  if (dst == src) goto done;
  SymShape ts = tensor_handle_shape(t);
  src = mix_broadcast_to_sym(src, &ts);
  if (src && dt_is_weak(src->dtype)) src = mix_cast(src, dt_least_upper(dst->dtype, src->dtype));
  if (!src) { st = tg_last_status(); goto done; }
  if (src->dtype != dst->dtype) {
    mix_err("assign dtype mismatch %s != %s", dst->dtype->name, src->dtype->name);
    st = TG_ERR_INVALID_ARGUMENT;
    goto done;
  }
  UOp *ib = dst;
  while (!uop_has_buffer_identity(ib, false) &&
         (op_has(uop_op(ib), OPP_MOVEMENT) || ib->op == TG_OP_BITCAST || ib->op == TG_OP_DETACH))
    ib = ib->src[0];
  if (ib != dst && uop_has_buffer_identity(ib, true)) {
    /* view assign: the buffer itself becomes AFTER(buffer, assign) in every live tensor */
    UOp *as2[2] = {ib, assign_of(dst, src)};
    UOpMap repl;
    uopmap_init(&repl);
    uopmap_put(&repl, ib, uop_new(TG_OP_AFTER, NULL, as2, 2, arg_none()));
    apply_map_to_handles(&repl);
    uopmap_free(&repl);
  } else {
    tensor_assign_node(t, src);
  }
done:
  mix_ctx_end();
  return st;
}
