/* tensor.h — internals of the Tensor API: the handle and the calls that wrap builders (uop/mixin.h) in handles.
 *
 * A public call (tg_add, tg_conv2d, ...) opens a build context (mix_ctx_begin), turns its handle arguments into nodes
 * with tensor_in (which seeds the context with their known shapes and devices), builds the result with the mix_*
 * builders and closes with tensor_ctx_end, which wraps the result in a new handle. */
#ifndef TG_TENSOR_TENSOR_H
#define TG_TENSOR_TENSOR_H

#include "uop/mixin.h"

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

/* ---- handles ---- */
/* Wraps `result` in a new handle (NULL stays NULL) and ends the context. */
tg_tensor *tensor_ctx_end(UOp *result);
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
/* The handle's shape with its symbolic sizes. */
SymShape tensor_handle_shape(const tg_tensor *t);

/* ---- builders that need storage on a device (Tensor.empty, clone) or the public argument types ---- */
/* Storage for the maximum of s (on the default device), viewed shrunk to s (tinygrad's Tensor.empty(3, vi)). */
UOp *tensor_empty_sym(const SymShape *s, const DType *dt);
/* A public tg_sint shape (keep_ok: -1 allowed); errors name the axis. */
bool tensor_sym_shape_arg(const tg_sint *shape, size_t ndim, bool keep_ok, SymShape *out);
UOp *tensor_clone(UOp *a);  /* a device-less value into a new CPU buffer (tinygrad's clone(device)) */

#endif
