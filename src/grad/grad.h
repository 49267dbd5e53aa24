/* grad.h — autograd internals: tinygrad's pm_gradient rule table and compute_gradient (mixin/gradient.py).
 *
 * The gradient of a graph is built with the Tensor builders (src/tensor/tensor.h), so it is an ordinary lazy graph
 * that the scheduler fuses like any other. Everything here runs inside a tensor call context (tctx_begin). */
#ifndef TG_GRAD_GRAD_H
#define TG_GRAD_GRAD_H

#include "uop/pattern.h"

/* The state a gradient rule sees: the incoming gradient of the matched node, and whether a builder failed (its
 * error is then in tg_last_error). */
typedef struct GradCtx {
  UOp *grad;
  bool failed;
} GradCtx;

/* pm_gradient: a rule matches a node and returns a TUPLE with one gradient per source (NOOP = no gradient). */
const RuleSet *grad_rules(void);

/* The broadcast-sum rule: a gradient v of a shaped edge whose source k has another shape is summed over the
 * broadcast axes in the sum-accumulation dtype, reshaped to k's shape and cast back. NULL on error. */
UOp *grad_unbroadcast(UOp *v, UOp *k);

/* compute_gradient(root, root_grad, targets): out[i] = d(root)/d(targets[i]) seeded with root_grad, or NULL when no
 * path leads from root to targets[i] (except through DETACH). False (tg_last_error set) when a node on the path
 * has no gradient rule or a builder fails. */
bool grad_compute(UOp *root, UOp *root_grad, UOp *const *targets, size_t n, UOp **out);

#endif
