/* optim.c — tinygrad's optimizers (nn/optim.py): SGD and LARS (one update rule with a trust coefficient), Adam, AdamW
 * and LAMB (one update rule with a trust ratio), and groups of optimizers.
 *
 * A step builds every update as lazy tensor ops from the parameters' gradients, assigns the new values into the
 * parameters and the optimizer state (param.assign(param - lr*update), m.assign(...), ...), and realizes all of them
 * in ONE schedule, so the scheduler fuses each parameter's update into a few kernels. The learning rate is a (1,)
 * float32 tensor read by the kernels, so changing it between steps changes no kernel. The formulas, their order of
 * operations and the constants' dtypes follow tinygrad's so the numbers match it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "nn/optim.h"
#include "tensor/tensor.h"

/* Two update rules cover the five optimizers, as in tinygrad: LARS (SGD = LARS with tcoef 0; momentum, nesterov,
 * weight decay, `classic` applies lr before the momentum) and LAMB (Adam = LAMB without the trust ratio and without
 * weight decay, AdamW = with it). A group steps its children in one schedule. */
typedef enum { OPTIM_LARS, OPTIM_LAMB, OPTIM_GROUP } OptimKind;

struct tg_optim {
  OptimKind kind;
  const char *op;       /* the public constructor's name, for messages */
  tg_tensor **params;   /* retained: the tensors that require a gradient (updated) */
  size_t nparams;
  tg_tensor **buffers;  /* retained: tensors that do not require a gradient (only realized with the step) */
  size_t nbuffers;
  tg_tensor *lr;        /* retained (1,) float32 */
  tg_dtype state_dtype; /* of b, m, v (OPTIM_DTYPE) */
  /* LARS / SGD */
  double momentum, wd, tcoef;
  bool nesterov, classic;
  tg_tensor **b;        /* momentum buffers, one per param (NULL when momentum is 0) */
  /* LAMB / Adam / AdamW */
  double b1, b2, eps;
  bool adam;
  tg_tensor *b1_t, *b2_t; /* (1,) float32: b1^t and b2^t */
  tg_tensor **m, **v;
  /* group */
  tg_optim **children;
  size_t nchildren;
};

/* --------------------------------------------------------------------------------------------------- creation */

/* A parameter must be a float tensor: the updates divide and take square roots. */
static bool is_float_dtype(tg_dtype d) {
  return d == TG_FLOAT16 || d == TG_BFLOAT16 || d == TG_FLOAT32 || d == TG_FLOAT64 ||
         (d >= TG_FP8E4M3 && d <= TG_FP8E5M2FNUZ);
}

/* A zero-filled buffer of t's shape in the state dtype (tinygrad's Tensor.zeros(t.shape, dtype=OPTIM_DTYPE)), owned
 * by the caller. Made from host memory so it is a real buffer at once: the first step costs as many kernels as any. */
static tg_tensor *zeros_state(const tg_tensor *t, tg_dtype dtype) {
  int64_t n = tg_numel(t);
  void *host = tg_calloc(n > 0 ? (size_t)n : 1, tg_dtype_itemsize(dtype));
  tg_tensor *z = tg_from_data(host, dtype, tg_shape(t), (size_t)tg_ndim(t));
  tg_free(host);
  return z;
}

/* tinygrad's OPTIM_DTYPE (default float32): the dtype of the per-param state. TG_VOID with an error if unknown. */
static tg_dtype state_dtype_from_env(const char *op) {
  static const struct {
    const char *name;
    tg_dtype dtype;
  } names[] = {{"float32", TG_FLOAT32}, {"float", TG_FLOAT32},   {"float16", TG_FLOAT16}, {"half", TG_FLOAT16},
               {"bfloat16", TG_BFLOAT16}, {"float64", TG_FLOAT64}, {"double", TG_FLOAT64}};
  const char *env = tg_getenv_str("OPTIM_DTYPE");
  if (!env || !*env) return TG_FLOAT32;
  for (size_t i = 0; i < TG_ARRAY_LEN(names); i++)
    if (strcmp(env, names[i].name) == 0) return names[i].dtype;
  tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: OPTIM_DTYPE=%s is not a float dtype (float32, float16, bfloat16, float64)",
               op, env);
  return TG_VOID;
}

/* The (1,) float32 scalars of the state (lr, b1^t, b2^t) are real buffers: kernels read them as arguments, so a new
 * value changes no kernel and needs no recompile. */
static tg_tensor *scalar_state(float value) {
  return tg_from_data(&value, TG_FLOAT32, TG_SHAPE(1));
}

static void free_tensor_list(tg_tensor **ts, size_t n) {
  if (!ts) return;
  for (size_t i = 0; i < n; i++) tg_release(ts[i]);
  tg_free(ts);
}

void tg_optim_free(tg_optim *o) {
  if (!o) return;
  free_tensor_list(o->params, o->nparams);
  free_tensor_list(o->buffers, o->nbuffers);
  free_tensor_list(o->b, o->b ? o->nparams : 0);
  free_tensor_list(o->m, o->m ? o->nparams : 0);
  free_tensor_list(o->v, o->v ? o->nparams : 0);
  tg_release(o->lr);
  tg_release(o->b1_t);
  tg_release(o->b2_t);
  for (size_t i = 0; i < o->nchildren; i++) tg_optim_free(o->children[i]);
  tg_free(o->children);
  tg_free(o);
}

/* The common part of every optimizer (tinygrad's Optimizer.__init__): checks lr, splits the tensors into params
 * (require a gradient) and buffers, dedups them, makes the lr tensor. NULL with an error on bad input. */
static tg_optim *optim_new(const char *op, OptimKind kind, tg_tensor *const *params, size_t n, double lr) {
  if (!(lr >= 0)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: invalid learning rate %g (must be >= 0)", op, lr);
    return NULL;
  }
  if (!params && n) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: params is NULL with n=%zu", op, n);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    if (!params[i]) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: params[%zu] is NULL", op, i);
      return NULL;
    }
    if (tg_get_requires_grad(params[i]) && !is_float_dtype(tg_get_dtype(params[i]))) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: params[%zu] has dtype %s (a parameter must be a float tensor)", op, i,
                   tg_dtype_name(tg_get_dtype(params[i])));
      return NULL;
    }
  }
  tg_dtype state_dtype = state_dtype_from_env(op);
  if (state_dtype == TG_VOID) return NULL;
  tg_optim *o = tg_calloc(1, sizeof *o);
  o->kind = kind;
  o->state_dtype = state_dtype;
  o->op = op;
  o->params = tg_calloc(n ? n : 1, sizeof *o->params);
  o->buffers = tg_calloc(n ? n : 1, sizeof *o->buffers);
  for (size_t i = 0; i < n; i++) {
    bool dup = false;
    for (size_t j = 0; j < i && !dup; j++) dup = params[j] == params[i];
    if (dup) continue;
    if (tg_get_requires_grad(params[i])) o->params[o->nparams++] = tg_retain(params[i]);
    else o->buffers[o->nbuffers++] = tg_retain(params[i]);
  }
  if (o->nparams == 0) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT,
                 "%s: the optimizer must have at least one param (a float tensor marked with tg_requires_grad)", op);
    tg_optim_free(o);
    return NULL;
  }
  tg_scope s = tg_scope_begin();
  o->lr = tg_retain(scalar_state((float)lr));
  tg_scope_end(s);
  if (!o->lr) {
    tg_optim_free(o);
    return NULL;
  }
  return o;
}

/* n zero-filled float32 state tensors shaped like the params; false on failure (error set). */
static bool new_state_list(tg_optim *o, tg_tensor ***out) {
  *out = tg_calloc(o->nparams, sizeof **out);
  tg_scope s = tg_scope_begin();
  bool ok = true;
  for (size_t i = 0; i < o->nparams && ok; i++)
    ok = ((*out)[i] = tg_retain(zeros_state(o->params[i], o->state_dtype))) != NULL;
  tg_scope_end(s);
  return ok;
}

static tg_optim *lars_new(const char *op, tg_tensor *const *params, size_t n, double lr, double momentum,
                          double weight_decay, bool nesterov, bool classic, double tcoef) {
  if (!(momentum >= 0)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: invalid momentum %g (must be >= 0)", op, momentum);
    return NULL;
  }
  if (!(weight_decay >= 0) || !isfinite(weight_decay) || !isfinite(tcoef) || !isfinite(momentum)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: invalid weight_decay %g / trust coefficient %g / momentum %g", op,
                 weight_decay, tcoef, momentum);
    return NULL;
  }
  tg_optim *o = optim_new(op, OPTIM_LARS, params, n, lr);
  if (!o) return NULL;
  o->momentum = momentum;
  o->wd = weight_decay;
  o->nesterov = nesterov;
  o->classic = classic;
  o->tcoef = tcoef;
  if (momentum != 0 && !new_state_list(o, &o->b)) {
    tg_optim_free(o);
    return NULL;
  }
  return o;
}

/* tinygrad LARS: momentum SGD whose step is scaled per parameter by the trust ratio tcoef * |w| / (|g| + wd * |w|)
 * (1 when either norm is 0). */
tg_optim *tg_optim_lars(tg_tensor *const *params, size_t n, double lr, double momentum, double weight_decay,
                        bool nesterov, bool classic, double tcoef) {
  return lars_new("tg_optim_lars", params, n, lr, momentum, weight_decay, nesterov, classic, tcoef);
}

/* SGD is LARS with a trust coefficient of 0 (the update is then plain momentum SGD). */
tg_optim *tg_optim_sgd(tg_tensor *const *params, size_t n, double lr, double momentum, double weight_decay,
                       bool nesterov, bool classic) {
  return lars_new("tg_optim_sgd", params, n, lr, momentum, weight_decay, nesterov, classic, 0.0);
}

static tg_optim *lamb_new(const char *op, tg_tensor *const *params, size_t n, double lr, double b1, double b2,
                          double eps, double weight_decay, bool adam) {
  if (!(weight_decay >= 0) || !isfinite(weight_decay)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: invalid weight_decay %g (must be >= 0)", op, weight_decay);
    return NULL;
  }
  if (!isfinite(b1) || !isfinite(b2) || !isfinite(eps)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s: b1 %g, b2 %g and eps %g must be finite", op, b1, b2, eps);
    return NULL;
  }
  tg_optim *o = optim_new(op, OPTIM_LAMB, params, n, lr);
  if (!o) return NULL;
  o->b1 = b1;
  o->b2 = b2;
  o->eps = eps;
  o->wd = weight_decay;
  o->adam = adam;
  tg_scope s = tg_scope_begin();
  o->b1_t = tg_retain(scalar_state(1.0f));
  o->b2_t = tg_retain(scalar_state(1.0f));
  tg_scope_end(s);
  if (!o->b1_t || !o->b2_t || !new_state_list(o, &o->m) || !new_state_list(o, &o->v)) {
    tg_optim_free(o);
    return NULL;
  }
  return o;
}

/* tinygrad LAMB: the Adam update plus weight decay, scaled per parameter by |w| / |update| (1 when either is 0). */
tg_optim *tg_optim_lamb(tg_tensor *const *params, size_t n, double lr, double b1, double b2, double eps,
                        double weight_decay) {
  return lamb_new("tg_optim_lamb", params, n, lr, b1, b2, eps, weight_decay, false);
}

tg_optim *tg_optim_adam(tg_tensor *const *params, size_t n, double lr, double b1, double b2, double eps) {
  return lamb_new("tg_optim_adam", params, n, lr, b1, b2, eps, 0.0, true);
}

tg_optim *tg_optim_adamw(tg_tensor *const *params, size_t n, double lr, double b1, double b2, double eps,
                         double weight_decay) {
  return lamb_new("tg_optim_adamw", params, n, lr, b1, b2, eps, weight_decay, true);
}

/* tinygrad OptimizerGroup: the group owns its children (tg_optim_free frees them); zero_grad, set_lr and step go to
 * each, the step realizes all of them together. */
tg_optim *tg_optim_group(tg_optim *const *optims, size_t n) {
  if (!optims || n == 0) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_optim_group: no optimizers given");
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    if (!optims[i]) {
      tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_optim_group: optims[%zu] is NULL", i);
      return NULL;
    }
    for (size_t j = 0; j < i; j++)
      if (optims[j] == optims[i]) {
        tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_optim_group: optims[%zu] is given twice", i);
        return NULL;
      }
  }
  tg_optim *o = tg_calloc(1, sizeof *o);
  o->kind = OPTIM_GROUP;
  o->op = "tg_optim_group";
  o->children = tg_calloc(n, sizeof *o->children);
  memcpy(o->children, optims, n * sizeof *optims);
  o->nchildren = n;
  return o;
}

/* ------------------------------------------------------------------------------------------------------- step */

/* Each builder below runs inside the step's scope: every temporary belongs to it. W() is a weak float constant
 * (a Python float in tinygrad), which takes its partner's dtype. */
#define W(x) tg_const_float(x)

/* The whole tensor's L2 norm, a 0-d value that stays on the device (the trust ratios never reach the host). */
static tg_tensor *l2_norm(const tg_tensor *t) { return tg_sqrt(tg_sum(tg_square(t), NULL, 0, false)); }

/* tinygrad's LARS._step for one parameter: returns its update (already scaled by the learning rate). */
static tg_tensor *lars_update(tg_optim *o, size_t i, tg_tensor *t, tg_tensor *g) {
  tg_tensor *r = NULL; /* NULL: the Python float 1.0 (a multiplication by 1.0 is exact, so it is left out) */
  if (o->tcoef != 0) {
    tg_tensor *r1 = l2_norm(t), *r2 = l2_norm(g);
    tg_tensor *ratio = tg_div(tg_mul(W(o->tcoef), r1), tg_add(r2, tg_mul(W(o->wd), r1)));
    r = tg_where(tg_gt(r1, W(0.0)), tg_where(tg_gt(r2, W(0.0)), ratio, W(1.0)), W(1.0));
  }
  if (o->wd > 0) g = tg_add(g, tg_mul(W(o->wd), t));
  if (o->classic) g = tg_mul(r ? tg_mul(g, r) : g, o->lr);
  if (o->momentum != 0) {
    tg_tensor *b = o->b[i];
    tg_tensor *nb = tg_add(tg_mul(W(o->momentum), b), g);
    if (tg_assign(b, tg_cast(nb, tg_get_dtype(b))) != TG_OK) return NULL;
    g = o->nesterov ? tg_add(g, tg_mul(W(o->momentum), b)) : b;
  }
  if (!o->classic) g = tg_mul(r ? tg_mul(g, r) : g, o->lr);
  return tg_cast(g, tg_get_dtype(t));
}

/* tinygrad's LAMB._step for one parameter (b1_t and b2_t already advanced). */
/* m and v are assigned first and then read back in the update (m_hat, v_hat use the new values), the order
 * tinygrad's step has; the casts keep the state in OPTIM_DTYPE whatever the gradient's dtype. */
static tg_tensor *lamb_update(tg_optim *o, size_t i, tg_tensor *t, tg_tensor *g) {
  tg_tensor *m = o->m[i], *v = o->v[i];
  tg_tensor *nm = tg_add(tg_mul(W(o->b1), m), tg_mul(W(1.0 - o->b1), g));
  if (tg_assign(m, tg_cast(nm, tg_get_dtype(m))) != TG_OK) return NULL;
  tg_tensor *nv = tg_add(tg_mul(W(o->b2), v), tg_mul(W(1.0 - o->b2), tg_mul(g, g)));
  if (tg_assign(v, tg_cast(nv, tg_get_dtype(v))) != TG_OK) return NULL;
  tg_tensor *m_hat = tg_div(m, tg_sub(W(1.0), o->b1_t));
  tg_tensor *v_hat = tg_div(v, tg_sub(W(1.0), o->b2_t));
  tg_tensor *up = tg_add(tg_div(m_hat, tg_add(tg_sqrt(v_hat), W(o->eps))), tg_mul(W(o->wd), t));
  tg_tensor *scale = o->lr;
  if (!o->adam) {
    tg_tensor *r1 = l2_norm(t), *r2 = l2_norm(up);
    tg_tensor *r = tg_where(tg_gt(r1, W(0.0)), tg_where(tg_gt(r2, W(0.0)), tg_div(r1, r2), W(1.0)), W(1.0));
    scale = tg_mul(o->lr, r);
  }
  return tg_cast(tg_mul(scale, up), tg_get_dtype(t));
}

/* Every param (of every optimizer of a group) has a gradient: checked before anything is assigned, so a failed step
 * leaves parameters and state untouched. */
static tg_status check_grads(const tg_optim *o) {
  for (size_t i = 0; i < o->nchildren; i++) {
    tg_status st = check_grads(o->children[i]);
    if (st != TG_OK) return st;
  }
  for (size_t i = 0; i < o->nparams; i++)
    if (!tg_grad(o->params[i]))
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "%s step: param %zu (shape %s) has no gradient: call tg_backward "
                          "on a loss first", o->op, i, mix_fmt_dims(tg_shape(o->params[i]), tg_ndim(o->params[i])));
  return TG_OK;
}

/* Appends the tensors a step realizes for `o` (tinygrad's schedule_step: state, params, buffers) after building the
 * updates and assigning them. The caller holds a scope open. */
static tg_status build_step(tg_optim *o, tg_tensor ***list, size_t *len, size_t *cap) {
#define PUSH(t)                                                           \
  do {                                                                    \
    if (*len == *cap) {                                                   \
      *cap = *cap ? 2 * *cap : 16;                                        \
      *list = tg_realloc(*list, *cap * sizeof **list);                    \
    }                                                                     \
    (*list)[(*len)++] = (t);                                              \
  } while (0)
  if (o->kind == OPTIM_GROUP) {
    for (size_t i = 0; i < o->nchildren; i++) {
      tg_status st = build_step(o->children[i], list, len, cap);
      if (st != TG_OK) return st;
    }
    return TG_OK;
  }
  if (o->kind == OPTIM_LAMB) {
    if (tg_assign(o->b1_t, tg_mul(o->b1_t, W(o->b1))) != TG_OK) return tg_last_status();
    if (tg_assign(o->b2_t, tg_mul(o->b2_t, W(o->b2))) != TG_OK) return tg_last_status();
  }
  for (size_t i = 0; i < o->nparams; i++) {
    tg_tensor *param = o->params[i];
    tg_tensor *t = tg_detach(param), *g = tg_grad(param);
    tg_tensor *up = o->kind == OPTIM_LAMB ? lamb_update(o, i, t, g) : lars_update(o, i, t, g);
    if (!up) return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_RUNTIME;
    tg_tensor *updated = tg_sub(t, up);
    /* a 0-d param: lr (1,) made the update (1,) (tinygrad fails to assign it back; the value is the same) */
    if (updated && tg_ndim(updated) != tg_ndim(param))
      updated = tg_reshape(updated, tg_shape(param), (size_t)tg_ndim(param));
    tg_status st = tg_assign(param, updated);
    if (st != TG_OK) return st;
  }
  /* the lr may hold a pending assign (tg_optim_lr): realized here, its handle then points at the buffer */
  PUSH(o->lr);
  if (o->kind == OPTIM_LAMB) {
    PUSH(o->b1_t);
    PUSH(o->b2_t);
    for (size_t i = 0; i < o->nparams; i++) PUSH(o->m[i]);
    for (size_t i = 0; i < o->nparams; i++) PUSH(o->v[i]);
  } else if (o->b) {
    for (size_t i = 0; i < o->nparams; i++) PUSH(o->b[i]);
  }
  for (size_t i = 0; i < o->nparams; i++) PUSH(o->params[i]);
  for (size_t i = 0; i < o->nbuffers; i++) PUSH(o->buffers[i]);
  return TG_OK;
#undef PUSH
}
#undef W

/* tinygrad Optimizer.schedule_step: the updates built and assigned, and the list of tensors whose realize runs them
 * (plus `also`, e.g. the loss, so the training step is one schedule). */
tg_status optim_schedule_step(tg_optim *o, tg_tensor *const *also, size_t nalso, tg_tensor ***out, size_t *nout) {
  *out = NULL;
  *nout = 0;
  if (!o) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_optim_step: optimizer is NULL");
  if (nalso && !also) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_optim_step: also is NULL with n=%zu", nalso);
  if (!tg_is_training())
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_optim_step: training mode is off; an optimizer step needs it "
                        "(tinygrad's TRAINING=1): call tg_set_training(true) first");
  tg_status st = check_grads(o);
  if (st != TG_OK) return st;
  size_t len = 0, cap = nalso + 16;
  tg_tensor **list = tg_malloc(cap * sizeof *list);
  for (size_t i = 0; i < nalso; i++) list[len++] = also[i];
  tg_scope s = tg_scope_begin();
  st = build_step(o, &list, &len, &cap);
  tg_scope_end(s);
  if (st != TG_OK) {
    tg_free(list);
    return st;
  }
  *out = list;
  *nout = len;
  return TG_OK;
}

tg_status tg_optim_step_with(tg_optim *o, tg_tensor *const *also, size_t nalso) {
  tg_tensor **list;
  size_t len;
  tg_status st = optim_schedule_step(o, also, nalso, &list, &len);
  if (st != TG_OK) return st;
  st = tg_realize_many(list, len);
  tg_free(list);
  return st;
}

tg_status tg_optim_step(tg_optim *o) { return tg_optim_step_with(o, NULL, 0); }

void tg_optim_zero_grad(tg_optim *o) {
  if (!o) return;
  for (size_t i = 0; i < o->nparams; i++) tg_zero_grad(o->params[i]);
  for (size_t i = 0; i < o->nchildren; i++) tg_optim_zero_grad(o->children[i]);
}

/* --------------------------------------------------------------------------------------------- learning rate */

tg_tensor *tg_optim_lr(tg_optim *o) {
  if (!o) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_optim_lr: optimizer is NULL");
    return NULL;
  }
  if (o->kind == OPTIM_GROUP) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_optim_lr: a group has one learning rate per optimizer");
    return NULL;
  }
  return o->lr;
}

/* A new learning rate is an assign into the lr buffer, realized at once: no kernel changes, and a JIT-captured
 * step reads the new value on its next replay. */
tg_status tg_optim_set_lr(tg_optim *o, double lr) {
  if (!o) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_optim_set_lr: optimizer is NULL");
  if (!(lr >= 0)) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_optim_set_lr: invalid learning rate %g", lr);
  if (o->kind == OPTIM_GROUP) {
    for (size_t i = 0; i < o->nchildren; i++) {
      tg_status st = tg_optim_set_lr(o->children[i], lr);
      if (st != TG_OK) return st;
    }
    return TG_OK;
  }
  tg_scope s = tg_scope_begin();
  tg_status st = tg_assign(o->lr, scalar_state((float)lr));
  if (st == TG_OK) st = tg_realize(o->lr);
  tg_scope_end(s);
  return st;
}

tg_status tg_optim_get_lr(tg_optim *o, double *out) {
  if (!o || !out) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_optim_get_lr: NULL argument");
  if (o->kind == OPTIM_GROUP) return tg_optim_get_lr(o->children[0], out);
  return tg_item_double(o->lr, out);
}

/* ------------------------------------------------------------------------------------------------- inspection */

size_t tg_optim_nparams(const tg_optim *o) {
  if (!o) return 0;
  size_t n = o->nparams;
  for (size_t i = 0; i < o->nchildren; i++) n += tg_optim_nparams(o->children[i]);
  return n;
}

/* The state tensors, in tinygrad's attribute order: lr, then b1_t, b2_t, m.*, v.* (LAMB) or b.* (LARS with momentum);
 * a group numbers its optimizers' tensors "0.lr", "1.m.0", ... (how a checkpoint names them). */
static size_t state_count(const tg_optim *o) {
  if (o->kind == OPTIM_GROUP) {
    size_t n = 0;
    for (size_t c = 0; c < o->nchildren; c++) n += state_count(o->children[c]);
    return n;
  }
  if (o->kind == OPTIM_LAMB) return 3 + 2 * o->nparams;
  return 1 + (o->b ? o->nparams : 0);
}

static tg_tensor *state_get(tg_optim *o, size_t i, char *name, size_t name_size) {
  if (o->kind == OPTIM_GROUP) {
    for (size_t c = 0; c < o->nchildren; c++) {
      size_t n = state_count(o->children[c]);
      if (i >= n) {
        i -= n;
        continue;
      }
      char inner[64];
      tg_tensor *t = state_get(o->children[c], i, inner, sizeof inner);
      snprintf(name, name_size, "%zu.%s", c, inner);
      return t;
    }
    return NULL;
  }
  if (i == 0) {
    snprintf(name, name_size, "lr");
    return o->lr;
  }
  i--;
  if (o->kind == OPTIM_LAMB) {
    if (i < 2) {
      snprintf(name, name_size, "b%zu_t", i + 1);
      return i == 0 ? o->b1_t : o->b2_t;
    }
    i -= 2;
    bool first = i < o->nparams;
    if (!first) i -= o->nparams;
    snprintf(name, name_size, "%s.%zu", first ? "m" : "v", i);
    return first ? o->m[i] : o->v[i];
  }
  snprintf(name, name_size, "b.%zu", i);
  return o->b[i];
}

size_t tg_optim_state_count(const tg_optim *o) { return o ? state_count(o) : 0; }

tg_tensor *tg_optim_state(tg_optim *o, size_t i, char *name, size_t name_size) {
  if (!o || i >= state_count(o)) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_optim_state: no state tensor %zu (the optimizer has %zu)", i,
                 o ? state_count(o) : 0);
    return NULL;
  }
  char buf[96];
  tg_tensor *t = state_get(o, i, buf, sizeof buf);
  if (name && name_size) snprintf(name, name_size, "%s", buf);
  return t;
}
