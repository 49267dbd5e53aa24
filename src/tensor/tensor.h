/* tensor.h — internals of the Tensor API: the handle, the per-call context and the graph builders.
 *
 * A public call (tg_add, tg_conv2d, ...) runs inside a call context (tensor_ctx_begin/tensor_ctx_end): a UOp scope that frees
 * every intermediate node at the end, the op name used in error messages, and a shape cache seeded with the input
 * handles' shapes so shape queries never walk the whole input graph.
 *
 * The builders t_* mirror tinygrad's mixin methods one to one and build the same UOps. They take and return UOp*;
 * NULL in means NULL out (the first error stays in tg_last_error), so composites read like the Python. */
#ifndef TG_TENSOR_TENSOR_H
#define TG_TENSOR_TENSOR_H

#include "tensor/shape.h"

struct tg_tensor {
  UOp *uop;           /* kept (uop_keep) while the handle lives */
  Shape shape;        /* the sizes; a symbolic one holds its maximum */
  UOp *sym[TG_MAX_DIMS]; /* the expression of each symbolic size (kept while the handle lives), NULL when concrete */
  bool symbolic;      /* some size is symbolic */
  int32_t rc;         /* references: the creator's (scope or caller) + tg_retain's */
  const char *device; /* "CPU", "CUDA:1" (interned, lives for the process); NULL for device-less values (weak
                         scalars, consts) */
  struct tg_tensor *prev, *next; /* the list of live handles (realize updates every handle on a realized root) */
  struct tg_tensor *grad; /* autograd (src/grad): the accumulated gradient, a handle owned by this one (or NULL) */
  bool requires_grad;     /* tg_backward fills `grad` */
  bool internal;          /* the library's own (the RNG counters): in no scope, not counted by tg_live_tensors */
};

/* ---- call context ---- */
void tensor_ctx_begin(const char *op);
/* Wraps `result` in a new handle (NULL stays NULL) and ends the context. */
tg_tensor *tensor_ctx_end(UOp *result);
void tensor_ctx_end_void(void);
/* Like tensor_ctx_end, but the handle belongs to the caller, never to an open scope (a tensor's grad is owned by it). */
tg_tensor *tensor_ctx_end_owned(UOp *result);
/* A handle the library owns (freed with tg_release): in no scope and not counted by tg_live_tensors, but updated by
 * every realize like any live handle (tinygrad's class-level tensors, Tensor._device_rng_counters). */
tg_tensor *tensor_handle_internal(UOp *u);
/* A new handle on u with a known shape and device (owned like any op result): the JIT's outputs on replay. */
tg_tensor *tensor_handle_known(UOp *u, const Shape *s, const char *device);
tg_tensor *tensor_handle_known_sym(UOp *u, const SymShape *s, const char *device);
/* Whole-handle assign, tinygrad's t.assign(src) (same shape and dtype, checked by the caller): t's node becomes
 * AFTER(t, STORE(t, src)); the store runs with the next realize that reads t. */
void tensor_assign_node(tg_tensor *t, UOp *src);
/* The first live handle (then ->next): autograd's backward looks for the handles that require a gradient. */
tg_tensor *tensor_live_first(void);
/* The handle's node, its shape seeded in the context's cache; NULL (with an error naming argument `i`) for NULL. */
UOp *tensor_in(const tg_tensor *t, int i);
/* Error with the op name prefixed; returns NULL. */
UOp *tensor_err(const char *fmt, ...) TG_PRINTF(1, 2);
UOp *tensor_err_unsupported(const char *what);
const char *tensor_ctx_op(void);

/* ---- queries on built nodes (within a context) ---- */
/* The shape; a symbolic shape is an error naming the op ("... not supported by this op yet"): code that reads sizes
 * as numbers calls this one. */
bool tensor_shape(UOp *u, Shape *out);
/* The shape with symbolic sizes allowed (code written for them). */
bool tensor_shape_sym(UOp *u, SymShape *out);
/* The handle's shape with its symbolic sizes. */
SymShape tensor_handle_shape(const tg_tensor *t);
int tensor_ndim(UOp *u);
bool tensor_has_device(UOp *u);                 /* has a device (some BUFFER below) */
/* tinygrad's UOp.device: a BUFFER's own, a COPY's target, else the first source's that has one; NULL for none.
 * Interned (lives for the process). */
const char *tensor_device_name(UOp *u);
/* The process-lifetime copy of a canonical device name. */
const char *tensor_device_intern(const char *canonical);
bool tensor_resolve_dim(UOp *u, int dim, bool extra, int *out); /* tinygrad _resolve_dim, errors on out of range */
const char *tensor_fmt_shape(const Shape *s); /* rotating static buffers, for messages */
const char *tensor_fmt_dims(const int64_t *d, int n);

/* ---- constants and dtype ---- */
UOp *tensor_const(Const v, const DType *d);       /* tinygrad UOp.const: 0-d CONST (d NULL: from the value's kind) */
UOp *tensor_const_like(UOp *like, Const v, const DType *d); /* CONST expanded to like's shape (d NULL: like's dtype) */
UOp *tensor_cast(UOp *x, const DType *d);
UOp *tensor_bitcast(UOp *x, const DType *d);

/* ---- movement (tinygrad MovementMixin and UOp._mop) ---- */
UOp *tensor_mop(UOp *x, TgOp op, const int64_t *a, const int64_t *b, int n); /* raw: a/b per op as the UOp takes them */
UOp *tensor_reshape(UOp *x, const int64_t *shape, int n);                      /* -1 inferred */
UOp *tensor_broadcast_to(UOp *x, const Shape *s);
UOp *tensor_expand(UOp *x, const int64_t *shape, int n);                       /* -1 keeps */
UOp *tensor_permute(UOp *x, const int *order, int n);
UOp *tensor_transpose(UOp *x, int d0, int d1);
UOp *tensor_flip(UOp *x, const int *axes, int n);
UOp *tensor_pad_raw(UOp *x, const int64_t *pads, int n);     /* MovementMixin.pad: (before, after) per axis, >= 0 */
UOp *tensor_shrink(UOp *x, const int64_t *bounds, int n);    /* (start, end) per axis */
UOp *tensor_shrink_to(UOp *x, const int64_t *shape, int n);  /* -1 keeps */
UOp *tensor_pad_to(UOp *x, const int64_t *shape, int n);
UOp *tensor_squeeze(UOp *x, int dim);
UOp *tensor_unsqueeze(UOp *x, int dim);
UOp *tensor_flatten(UOp *x, int start, int end);
UOp *tensor_repeat(UOp *x, const int64_t *repeats, int n);
UOp *tensor_stack(UOp *const *xs, int n, int dim);
UOp *tensor_cat(UOp *const *xs, int n, int dim);
UOp *tensor_pool(UOp *x, const int64_t *k, int nk, const int64_t *stride, const int64_t *dilation);
/* conv2d without bias: x (B, groups*cin, H, W) padded by pad4 (y before, y after, x before, x after), w (cout, cin, KH, KW) */
UOp *tensor_conv2d(UOp *x, UOp *w, int groups, const int64_t stride[2], const int64_t dilation[2], const int64_t pad4[4]);
/* the input gradient of a stride-1 conv2d with padding (py, px): g convolved with w transposed and flipped */
UOp *tensor_conv2d_input_grad(UOp *g, UOp *w, int groups, int64_t py, int64_t px);
/* the graph tinygrad builds: every CUSTOM_GRAD replaced by its value, without the DETACH the marker put in it */
UOp *tensor_strip_custom_grad(UOp *root);
UOp *tensor_pad_constant(UOp *x, const int64_t *pads, int n, Const value); /* pads may be negative */
UOp *tensor_pad_mode(UOp *x, const int64_t *pads, int n, tg_pad_mode mode, Const value);
UOp *tensor_getitem(UOp *x, const tg_index *idx, size_t n);

/* ---- symbolic sizes (symshape.c): sizes are weak-int UOps (CONST or an expression of bound Variables) ---- */
/* The size expression checked: an int, or an int expression whose leaves are bound Variables and CONSTs. */
UOp *tensor_sint(UOp *e);
/* Its value with every bound Variable at its bound value (false: not evaluable). */
bool tensor_sint_value(UOp *e, int64_t *out);
UOp *tensor_reshape_sym(UOp *x, const SymShape *to);
UOp *tensor_broadcast_to_sym(UOp *x, const SymShape *ns);
UOp *tensor_shrink_sym(UOp *x, UOp *const *bounds, int n); /* (start, end) per axis */
UOp *tensor_pad_sym(UOp *x, UOp *const *pads, int n);      /* (before, after) per axis, zero fill */
/* Storage for the maximum of s (on the default device), viewed shrunk to s (tinygrad's Tensor.empty(3, vi)). */
UOp *tensor_empty_sym(const SymShape *s, const DType *dt);
/* A public tg_sint shape (keep_ok: -1 allowed); errors name the axis. */
bool tensor_sym_shape_arg(const tg_sint *shape, size_t ndim, bool keep_ok, SymShape *out);
/* The product of the sizes of s on the axes red[i] (NULL: all), a weak-int UOp. */
UOp *tensor_sym_numel(const SymShape *s, const bool *red);

/* ---- elementwise (tinygrad ElementwiseMixin) ---- */
UOp *tensor_alu(TgOp op, UOp *a, UOp *b);          /* promote both (_broadcasted) then op */
UOp *tensor_alu1(TgOp op, UOp *a);
UOp *tensor_add(UOp *a, UOp *b);
UOp *tensor_sub(UOp *a, UOp *b);
UOp *tensor_mul(UOp *a, UOp *b);
UOp *tensor_div(UOp *a, UOp *b, tg_rounding mode);
UOp *tensor_mod(UOp *a, UOp *b);
UOp *tensor_fmod(UOp *a, UOp *b);
UOp *tensor_neg(UOp *a);
UOp *tensor_lt(UOp *a, UOp *b);
UOp *tensor_gt(UOp *a, UOp *b);
UOp *tensor_ge(UOp *a, UOp *b);
UOp *tensor_le(UOp *a, UOp *b);
UOp *tensor_ne(UOp *a, UOp *b);
UOp *tensor_eq(UOp *a, UOp *b);
UOp *tensor_logical_not(UOp *a);
UOp *tensor_bitwise_not(UOp *a);
UOp *tensor_where(UOp *c, UOp *x, UOp *y);
UOp *tensor_maximum(UOp *a, UOp *b);
UOp *tensor_minimum(UOp *a, UOp *b);
UOp *tensor_inverse(UOp *a);
UOp *tensor_reciprocal(UOp *a);
UOp *tensor_sqrt(UOp *a);
UOp *tensor_exp(UOp *a);
UOp *tensor_exp2(UOp *a);
UOp *tensor_log(UOp *a);
UOp *tensor_log2(UOp *a);
UOp *tensor_sin(UOp *a);
UOp *tensor_cos(UOp *a);
UOp *tensor_trunc(UOp *a);
UOp *tensor_floor(UOp *a);
UOp *tensor_ceil(UOp *a);
UOp *tensor_sign(UOp *a);
UOp *tensor_abs(UOp *a);
UOp *tensor_square(UOp *a);
UOp *tensor_pow(UOp *a, UOp *b);
UOp *tensor_relu(UOp *a);
UOp *tensor_sigmoid(UOp *a);
UOp *tensor_tanh(UOp *a);
UOp *tensor_softplus(UOp *a, double beta);
UOp *tensor_logaddexp(UOp *a, UOp *b);
UOp *tensor_clamp(UOp *a, UOp *lo, UOp *hi);
UOp *tensor_isinf(UOp *a);
UOp *tensor_isnan(UOp *a);
UOp *tensor_detach(UOp *a);
UOp *tensor_contiguous(UOp *a);
UOp *tensor_clone(UOp *a);  /* a device-less value into a new CPU buffer (tinygrad's clone(device)) */
/* shorthands with a weak scalar operand (tinygrad's `x + 2`, `2 * x`) */
UOp *tensor_weak_float(double v);   /* weak float CONST */
UOp *tensor_weak_int(int64_t v);  /* weak int CONST */

/* ---- reductions (ReduceMixin and friends) ---- */
/* axes NULL: all axes. */
UOp *tensor_reduce(UOp *x, TgOp op, const int *axes, int naxes, bool keepdim);
UOp *tensor_sum(UOp *x, const int *axes, int naxes, bool keepdim, const DType *dtype);
UOp *tensor_prod(UOp *x, const int *axes, int naxes, bool keepdim);
UOp *tensor_max(UOp *x, const int *axes, int naxes, bool keepdim);
UOp *tensor_min(UOp *x, const int *axes, int naxes, bool keepdim);
UOp *tensor_mean(UOp *x, const int *axes, int naxes, bool keepdim);
UOp *tensor_var(UOp *x, const int *axes, int naxes, bool keepdim, double correction);
UOp *tensor_softmax(UOp *x, int axis, bool log);
UOp *tensor_logsumexp(UOp *x, int axis, bool keepdim);
UOp *tensor_argmax(UOp *x, int axis, bool keepdim);
UOp *tensor_cumalu(UOp *x, int axis, TgOp op);
UOp *tensor_cumsum(UOp *x, int axis);
UOp *tensor_dot(UOp *a, UOp *b);
UOp *tensor_arange(double start, double stop, double step, const DType *dtype);
UOp *tensor_one_hot_along_dim(UOp *x, int64_t num_classes, int dim);
UOp *tensor_gather(UOp *x, int dim, UOp *index);

#endif
