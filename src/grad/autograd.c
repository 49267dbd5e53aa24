/* autograd.c — the public autograd API (include/tinygrad.h, "autograd"): requires_grad, backward filling and
 * accumulating each tensor's grad, gradient(), detach and zero_grad (tinygrad Tensor.backward / gradient). */
#include "grad/grad.h"

#include "tensor/tensor.h"

/* ------------------------------------------------------------------------------------------------- checks */

static tg_status fail_status(void) { return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_INVALID_ARGUMENT; }

/* The root and its seed gradient: 1 for a 0-d root, else the given gradient (same shape). NULL on error. */
static UOp *root_seed(const tg_tensor *root, const tg_tensor *gradient, UOp **root_uop) {
  UOp *r = tensor_in(root, 1);
  if (!r) return NULL;
  if (!dt_is_float(r->dtype)) return mix_err("only float tensors have gradients (root is %s)", r->dtype->name);
  *root_uop = r;
  if (!gradient) {
    if (root->shape.ndim != 0)
      return mix_err("when no gradient is provided, backward must be called on a scalar tensor (root shape %s)",
                  mix_fmt_shape(&root->shape));
    return mix_const_like(r, const_float(1.0), NULL);
  }
  UOp *g = tensor_in(gradient, 2);
  if (!g) return NULL;
  if (!shape_eq(&gradient->shape, &root->shape))
    return mix_err("gradient shape %s differs from root shape %s", mix_fmt_shape(&gradient->shape), mix_fmt_shape(&root->shape));
  return g;
}

/* The rules for a tensor we differentiate with respect to: a float, and not weak (a C scalar such as
 * tg_const_float(2.0) is a constant without a dtype of its own: "cannot take gradient wrt a weak tensor"). A strong
 * device-less constant (tg_scalar) is allowed, as in tinygrad; tg_requires_grad also wants storage. */
static bool check_wrt(const tg_tensor *t, int argi, bool need_storage) {
  UOp *u = tensor_in(t, argi);
  if (!u) return false;
  if (dt_is_weak(u->dtype)) {
    mix_err("cannot take gradient wrt a weak tensor (argument %d, dtype %s): it has no storage", argi, u->dtype->name);
    return false;
  }
  if (!dt_is_float(u->dtype)) {
    mix_err("only float tensors have gradients (argument %d is %s)", argi, u->dtype->name);
    return false;
  }
  if (need_storage && !t->device) {
    mix_err("a constant tensor (argument %d, shape %s) has no storage for a grad: backward fills only tensors with "
         "storage (tg_gradient works)", argi, mix_fmt_shape(&t->shape));
    return false;
  }
  return true;
}

/* ------------------------------------------------------------------------------------------ requires_grad */

tg_status tg_requires_grad(tg_tensor *t, bool requires_grad) {
  mix_ctx_begin("tg_requires_grad");
  bool ok = requires_grad ? check_wrt(t, 1, true) : tensor_in(t, 1) != NULL;
  if (ok) t->requires_grad = requires_grad;
  mix_ctx_end();
  return ok ? TG_OK : fail_status();
}

bool tg_get_requires_grad(const tg_tensor *t) { return t && t->requires_grad; }

tg_tensor *tg_grad(const tg_tensor *t) { return t ? t->grad : NULL; }

void tg_zero_grad(tg_tensor *t) {
  if (!t || !t->grad) return;
  tg_release(t->grad);
  t->grad = NULL;
}

tg_tensor *tg_detach(const tg_tensor *t) {
  mix_ctx_begin("tg_detach");
  return tensor_ctx_end(mix_detach(tensor_in(t, 1)));
}

/* -------------------------------------------------------------------------------------------------- gradient */

tg_status tg_gradient_with_grad(const tg_tensor *target, const tg_tensor *gradient, const tg_tensor *const *wrt,
                                size_t n, tg_tensor **out) {
  if (out)
    for (size_t i = 0; i < n; i++) out[i] = NULL;
  mix_ctx_begin("tg_gradient");
  UOp *root = NULL, *seed = root_seed(target, gradient, &root);
  bool ok = seed != NULL;
  if (ok && n && (!wrt || !out)) {
    mix_err("wrt and out must not be NULL");
    ok = false;
  }
  UOp **targets = tg_calloc(n ? n : 1, sizeof *targets), **grads = tg_calloc(n ? n : 1, sizeof *grads);
  for (size_t i = 0; ok && i < n; i++) {
    ok = check_wrt(wrt[i], (int)i + 3, false);
    if (ok) targets[i] = wrt[i]->uop;
  }
  ok = ok && grad_compute(root, seed, targets, n, grads);
  for (size_t i = 0; ok && i < n; i++) {
    /* no path from the target: zeros (tinygrad's const_like(0)) */
    if (!grads[i]) grads[i] = mix_const_like(targets[i], const_int(0), NULL);
    SymShape s;
    ok = grads[i] && mix_shape_sym(grads[i], &s);
  }
  /* every result is valid: the handles cannot fail now */
  for (size_t i = 0; ok && i < n; i++) {
    mix_ctx_begin("tg_gradient");
    out[i] = tensor_ctx_end(grads[i]);
  }
  tg_free(targets);
  tg_free(grads);
  mix_ctx_end();
  return ok ? TG_OK : fail_status();
}

tg_status tg_gradient(const tg_tensor *target, const tg_tensor *const *wrt, size_t n, tg_tensor **out) {
  return tg_gradient_with_grad(target, NULL, wrt, n, out);
}

/* --------------------------------------------------------------------------------------------------- backward */

static bool in_graph(const UOpMap *nodes, const tg_tensor *t) { return uopmap_get(nodes, t->uop) != NULL; }

/* all: tinygrad's rule, every live float handle with storage in the graph; else only those that require grad */
static tg_status backward(tg_tensor *root, const tg_tensor *gradient, bool all) {
  mix_ctx_begin(all ? "tg_backward_all" : "tg_backward");
  UOp *r = NULL, *seed = root_seed(root, gradient, &r);
  bool ok = seed != NULL;
  /* every live handle that requires a gradient and whose node is in the root's graph */
  TG_VEC(tg_tensor *) need = {0};
  if (ok) {
    UOpVec order = {0};
    uop_toposort(r, NULL, NULL, &order);
    UOpMap nodes;
    uopmap_init(&nodes);
    for (size_t i = 0; i < order.len; i++) uopmap_put(&nodes, order.data[i], (void *)1);
    for (tg_tensor *h = tensor_live_first(); h; h = h->next)
      if ((all ? !h->internal : h->requires_grad) && h->device && dt_is_float(h->uop->dtype) && !dt_is_weak(h->uop->dtype) &&
          in_graph(&nodes, h))
        tg_vec_push(&need, h);
    uopmap_free(&nodes);
    tg_vec_free(&order);
  }
  UOp **targets = tg_calloc(need.len ? need.len : 1, sizeof *targets);
  UOp **grads = tg_calloc(need.len ? need.len : 1, sizeof *grads);
  for (size_t i = 0; i < need.len; i++) targets[i] = tensor_in(need.data[i], (int)i + 1);
  ok = ok && grad_compute(r, seed, targets, need.len, grads);
  /* build every new grad first, then install them: an error leaves all grads as they were */
  for (size_t i = 0; ok && i < need.len; i++) {
    tg_tensor *t = need.data[i];
    UOp *g = grads[i] ? grads[i] : mix_const_like(targets[i], const_int(0), NULL);
    if (g && !mix_has_device(g)) g = tensor_clone(g); /* a constant gradient gets storage, like tinygrad's clone(device) */
    if (g && t->grad) g = mix_add(tensor_in(t->grad, 1), g);
    SymShape s, ts = tensor_handle_shape(t);
    char b1[200], b2[200];
    if (g && mix_shape_sym(g, &s) && !shape_sym_eq(&s, &ts))
      g = mix_err("grad shape %s must match tensor shape %s", shape_sym_fmt(&s, b1, sizeof b1), shape_sym_fmt(&ts, b2, sizeof b2));
    grads[i] = g;
    ok = g != NULL;
  }
  for (size_t i = 0; ok && i < need.len; i++) {
    tg_tensor *t = need.data[i];
    if (t->grad) {
      /* accumulate: the grad handle (which the caller may hold) now means old grad + new */
      uop_keep(grads[i]);
      uop_drop(t->grad->uop);
      t->grad->uop = grads[i];
      t->grad->device = mix_device_name(grads[i]);
    } else {
      mix_ctx_begin("tg_backward");
      t->grad = tensor_ctx_end_owned(grads[i]);
    }
  }
  tg_free(targets);
  tg_free(grads);
  tg_vec_free(&need);
  mix_ctx_end();
  return ok ? TG_OK : fail_status();
}

tg_status tg_backward_with_grad(tg_tensor *root, const tg_tensor *gradient) { return backward(root, gradient, false); }
tg_status tg_backward(tg_tensor *loss) { return backward(loss, NULL, false); }
tg_status tg_backward_all(tg_tensor *root, const tg_tensor *gradient) { return backward(root, gradient, true); }
