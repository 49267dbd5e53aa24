/* gradient.c — compute_gradient (tinygrad mixin/gradient.py): mark the nodes on a path from the root to a target
 * (never through DETACH), walk them in reverse topological order, ask pm_gradient for each source's gradient, sum
 * broadcast gradients back to their source's shape, and accumulate by addition. */
#include "grad/grad.h"

#include "uop/mixin.h"

UOp *grad_unbroadcast(UOp *v, UOp *k) {
  SymShape ks, vs;
  if (!mix_shape_sym(k, &ks) || !mix_shape_sym(v, &vs)) return NULL;
  if (shape_sym_eq(&ks, &vs)) return v;
  /* tinygrad broadcast_axes: the axes added on the left, and the size-1 axes that were stretched */
  int nleft = vs.max.ndim - ks.max.ndim, axes[TG_MAX_DIMS], n = 0;
  if (nleft < 0) {
    char b1[200], b2[200];
    return mix_err("gradient of shape %s cannot be summed to %s", shape_sym_fmt(&vs, b1, sizeof b1), shape_sym_fmt(&ks, b2, sizeof b2));
  }
  for (int i = 0; i < nleft; i++) axes[n++] = i;
  for (int i = 0; i < ks.max.ndim; i++) {
    bool k_one = !ks.sym[i] && ks.max.d[i] == 1, v_one = !vs.sym[nleft + i] && vs.max.d[nleft + i] == 1;
    if (k_one && !v_one) axes[n++] = nleft + i;
  }
  UOp *acc = mix_cast(v, dt_sum_acc(v->dtype));
  UOp *sum = n ? mix_reduce(acc, TG_OP_ADD, axes, n, false) : acc;
  return mix_cast(mix_reshape_sym(sum, &ks), v->dtype);
}

typedef struct PathCtx {
  UOpMap targets; /* target -> 1 */
  UOpMap on_path; /* node -> 1 when some source is a target or on the path */
} PathCtx;

static bool is_none(const UOp *g) { return !g || g->op == TG_OP_NOOP; }

bool grad_compute(UOp *root, UOp *root_grad, UOp *const *targets, size_t n, UOp **out) {
  PathCtx p;
  uopmap_init(&p.targets);
  uopmap_init(&p.on_path);
  for (size_t i = 0; i < n; i++) uopmap_put(&p.targets, targets[i], (void *)1);
  /* _deepwalk: the nodes with a path to a target, in topological order, without DETACH */
  UOpVec order = {0}, walk = {0};
  uop_toposort(root, NULL, NULL, &order);
  for (size_t i = 0; i < order.len; i++) {
    UOp *u = order.data[i];
    bool on = false;
    for (uint32_t k = 0; k < u->nsrc && !on; k++)
      on = uopmap_get(&p.on_path, u->src[k]) || uopmap_get(&p.targets, u->src[k]);
    if (!on) continue;
    uopmap_put(&p.on_path, u, (void *)1);
    if (u->op != TG_OP_DETACH) tg_vec_push(&walk, u);
  }
  UOpMap grads;
  uopmap_init(&grads);
  uopmap_put(&grads, root, root_grad);
  bool ok = true;
  for (size_t w = walk.len; ok && w-- > 0;) {
    UOp *t0 = walk.data[w];
    void **gp = uopmap_get(&grads, t0);
    if (!gp || is_none(*gp)) continue;
    GradCtx gctx = {(UOp *)*gp, false};
    UOp *lgrads = pm_rewrite(grad_rules(), t0, &gctx);
    if (!lgrads) {
      if (!gctx.failed)
        tg_set_error(TG_ERR_UNSUPPORTED, "%s: failed to compute gradient for %s (no gradient rule)", mix_ctx_op(),
                     uop_op_name(uop_op(t0)));
      ok = false;
      break;
    }
    TG_ASSERT(lgrads->op == TG_OP_TUPLE && lgrads->nsrc == t0->nsrc, "a gradient rule gave %u gradients for %u sources",
              lgrads->nsrc, t0->nsrc);
    for (uint32_t k = 0; k < t0->nsrc; k++) {
      UOp *src = t0->src[k], *v = lgrads->src[k];
      if (is_none(v)) continue;
      /* the broadcast-sum rule (edges without a shape, like a TUPLE's, pass as they are) */
      if (v->op != TG_OP_TUPLE) v = grad_unbroadcast(v, src);
      if (!v) { ok = false; break; }
      void **prev = uopmap_get(&grads, src);
      if (prev && !is_none(*prev)) v = mix_add((UOp *)*prev, v);
      if (!v) { ok = false; break; }
      uopmap_put(&grads, src, v);
    }
  }
  for (size_t i = 0; i < n; i++) {
    void **g = ok ? uopmap_get(&grads, targets[i]) : NULL;
    out[i] = g && !is_none(*g) ? (UOp *)*g : NULL;
  }
  uopmap_free(&grads);
  uopmap_free(&p.targets);
  uopmap_free(&p.on_path);
  tg_vec_free(&order);
  tg_vec_free(&walk);
  return ok;
}
