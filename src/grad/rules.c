/* rules.c — pm_gradient: one rule per op, giving the gradient of each source from the node's incoming gradient
 * (tinygrad mixin/gradient.py; reference section 10). Rules build with the Tensor builders, so promotion and
 * broadcasting are tinygrad's (a weak scalar adopts its partner's dtype), and return TUPLE(grad per source) with a
 * NOOP for "no gradient". A source whose gradient has another shape is summed back by grad_unbroadcast. */
#include "grad/grad.h"

#include <math.h>
#include <stdio.h>

#include "uop/mixin.h"

static UOp *no_grad(void) { return uop_new(TG_OP_NOOP, DT_VOID, NULL, 0, arg_none()); }

/* The rule's answer: TUPLE of the gradients. A NULL entry means a builder failed: flag it so compute_gradient keeps
 * that builder's message, and report "no match" (root). */
static UOp *grads_of(RwCtx *rw, UOp *root, UOp *const *g, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!g[i]) {
      ((GradCtx *)rw->ctx)->failed = true;
      return root;
    }
  return uop_new(TG_OP_TUPLE, DT_VOID, g, n, arg_none());
}

static UOp *incoming(RwCtx *rw) { return ((GradCtx *)rw->ctx)->grad; }

static bool src_shape(RwCtx *rw, UOp *root, uint32_t i, SymShape *s) {
  if (mix_shape_sym(root->src[i], s)) return true;
  ((GradCtx *)rw->ctx)->failed = true;
  return false;
}

/* ------------------------------------------------------------------------------------------- elementwise */

/* CAST: the gradient goes back to the source's dtype */
static UOp *grad_cast(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g = mix_cast(incoming(rw), root->src[0]->dtype);
  return grads_of(rw, root, &g, 1);
}

/* d(1/x) = -1/x^2 = -y*y */
static UOp *grad_reciprocal(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g = mix_mul(mix_mul(mix_neg(incoming(rw)), root), root);
  return grads_of(rw, root, &g, 1);
}

/* d sin(x) = cos(x) = sin(pi/2 - x) */
static UOp *grad_sin(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g = mix_mul(mix_sin(mix_sub(mix_weak_float(M_PI / 2), root->src[0])), incoming(rw));
  return grads_of(rw, root, &g, 1);
}

/* d log2(x) = 1/(x ln2) */
static UOp *grad_log2(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g = mix_div(incoming(rw), mix_mul(root->src[0], mix_weak_float(M_LN2)), TG_ROUND_NONE);
  return grads_of(rw, root, &g, 1);
}

/* d 2^x = 2^x ln2 */
static UOp *grad_exp2(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g = mix_mul(mix_mul(root, incoming(rw)), mix_weak_float(M_LN2));
  return grads_of(rw, root, &g, 1);
}

/* d sqrt(x) = 1/(2 sqrt(x)) */
static UOp *grad_sqrt(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g = mix_div(incoming(rw), mix_mul(root, mix_weak_int(2)), TG_ROUND_NONE);
  return grads_of(rw, root, &g, 1);
}

/* TRUNC is flat almost everywhere */
static UOp *grad_trunc(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g = mix_const_like(incoming(rw), const_int(0), NULL);
  return grads_of(rw, root, &g, 1);
}

/* comparisons have no gradient (relu and friends are written with WHERE so theirs is sensible) */
static UOp *grad_none2(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g[2] = {no_grad(), no_grad()};
  return grads_of(rw, root, g, 2);
}

static UOp *grad_add(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g[2] = {incoming(rw), incoming(rw)};
  return grads_of(rw, root, g, 2);
}

static UOp *grad_mul(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g[2] = {mix_mul(root->src[1], incoming(rw)), mix_mul(root->src[0], incoming(rw))};
  return grads_of(rw, root, g, 2);
}

/* POW(b, e): d/db = e*b^(e-1) (0 where e == 0); d/de = b^e*ln(b) (where b == 0: -inf for e < 0, else 0) */
static UOp *grad_pow(RwCtx *rw, UOp *root, UOp **m) {
  UOp *b = m[0], *e = m[1], *ctx = incoming(rw);
  UOp *db = mix_where(mix_eq(e, mix_weak_int(0)), e, mix_mul(e, mix_pow(b, mix_sub(e, mix_weak_int(1)))));
  UOp *at_zero = mix_where(mix_lt(e, mix_weak_int(0)), mix_const_like(root, const_float(-INFINITY), NULL), mix_weak_int(0));
  UOp *de = mix_where(mix_eq(b, mix_weak_int(0)), at_zero, mix_mul(mix_mul(root, mix_log2(b)), mix_weak_float(M_LN2)));
  UOp *g[2] = {mix_mul(ctx, db), mix_mul(ctx, de)};
  return grads_of(rw, root, g, 2);
}

/* MAX(x, y): the gradient goes to the larger source, split in half on ties */
static UOp *grad_max(RwCtx *rw, UOp *root, UOp **m) {
  UOp *x = m[0], *y = m[1], *ctx = incoming(rw);
  UOp *gx = mix_where(mix_gt(x, y), ctx, mix_where(mix_eq(x, y), mix_mul(ctx, mix_weak_float(0.5)), mix_weak_int(0)));
  UOp *gy = mix_where(mix_lt(x, y), ctx, mix_where(mix_eq(x, y), mix_mul(ctx, mix_weak_float(0.5)), mix_weak_int(0)));
  UOp *g[2] = {gx, gy};
  return grads_of(rw, root, g, 2);
}

/* WHERE(c, a, b): the gradient goes to the branch that was taken */
static UOp *grad_where(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *ctx = incoming(rw), *c = root->src[0], *zero = mix_const_like(ctx, const_int(0), NULL);
  UOp *g[3] = {no_grad(), mix_where(c, ctx, zero), mix_where(c, zero, ctx)};
  return grads_of(rw, root, g, 3);
}

/* ---------------------------------------------------------------------------------------------- reductions */

/* REDUCE(op, n) reduces the first n axes of its source */
static UOp *grad_reduce(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *ctx = incoming(rw), *x = root->src[0], *g = NULL;
  int n = root->arg.red.naxes, axes[TG_MAX_DIMS];
  for (int i = 0; i < n && i < TG_MAX_DIMS; i++) axes[i] = i;
  SymShape xs;
  if (!src_shape(rw, root, 0, &xs)) return root;
  switch ((TgOp)root->arg.red.op) {
  case TG_OP_ADD: g = mix_broadcast_to_sym(ctx, &xs); break;
  case TG_OP_MAX: {
    /* the maxima share the gradient equally */
    UOp *mask = mix_cast(mix_eq(x, root), ctx->dtype);
    g = mix_mul(mix_div(mask, mix_reduce(mask, TG_OP_ADD, axes, n, false), TG_ROUND_NONE), ctx);
    break;
  }
  case TG_OP_MUL: {
    /* d(prod x)/dx_j = prod of the others: y/x_j when x_j != 0; with one zero, its gradient is the product of the
     * rest and every other gradient is 0; with two or more zeros, every gradient is 0 */
    UOp *is_zero = mix_eq(x, mix_weak_int(0));
    UOp *safe_x = mix_where(is_zero, mix_weak_int(1), x);
    UOp *zero_count = mix_reduce(mix_cast(is_zero, dt_sum_acc(is_zero->dtype)), TG_OP_ADD, axes, n, false);
    UOp *others = mix_where(mix_eq(zero_count, mix_weak_int(1)), mix_reduce(safe_x, TG_OP_MUL, axes, n, false), mix_weak_int(0));
    g = mix_mul(ctx, mix_where(is_zero, others, mix_div(root, safe_x, TG_ROUND_NONE)));
    break;
  }
  default: return root; /* no gradient for this reduce op: compute_gradient reports it */
  }
  return grads_of(rw, root, &g, 1);
}

/* ------------------------------------------------------------------------------------------------ movement */

static UOp *grad_reshape(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  SymShape s;
  if (!src_shape(rw, root, 0, &s)) return root;
  UOp *g[2] = {mix_reshape_sym(incoming(rw), &s), no_grad()};
  return grads_of(rw, root, g, 2);
}

/* EXPAND: the gradient passes; the broadcast-sum rule sums it over the expanded axes */
static UOp *grad_expand(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g[2] = {incoming(rw), no_grad()};
  return grads_of(rw, root, g, 2);
}

/* PAD(x, begins, sizes): shrink the padding away (sizes may be symbolic) */
static UOp *grad_pad(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  SymShape s, beg, sz;
  if (!src_shape(rw, root, 0, &s)) return root;
  if (!uop_marg_pair_sym(root, &beg, &sz)) return root;
  UOp *bounds[2 * TG_MAX_DIMS];
  for (int i = 0; i < s.max.ndim; i++) {
    bounds[2 * i] = shape_sym_dim(&beg, i);
    bounds[2 * i + 1] = uop_add(bounds[2 * i], shape_sym_dim(&s, i));
  }
  UOp *g[3] = {mix_shrink_sym(incoming(rw), bounds, s.max.ndim), no_grad(), no_grad()};
  return grads_of(rw, root, g, 3);
}

/* SHRINK(x, offsets, sizes): pad back with zeros (sizes may be symbolic) */
static UOp *grad_shrink(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  SymShape s, off, sz;
  if (!src_shape(rw, root, 0, &s)) return root;
  if (!uop_marg_pair_sym(root, &off, &sz)) return root;
  UOp *pads[2 * TG_MAX_DIMS];
  for (int i = 0; i < s.max.ndim; i++) {
    pads[2 * i] = shape_sym_dim(&off, i);
    pads[2 * i + 1] = uop_sub(uop_sub(shape_sym_dim(&s, i), pads[2 * i]), shape_sym_dim(&sz, i));
  }
  UOp *g[3] = {mix_pad_sym(incoming(rw), pads, s.max.ndim), no_grad(), no_grad()};
  return grads_of(rw, root, g, 3);
}

/* PERMUTE: the inverse permutation (argsort) */
static UOp *grad_permute(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  int inv[TG_MAX_DIMS], n = (int)root->arg.len;
  for (int i = 0; i < n && i < TG_MAX_DIMS; i++) inv[root->arg.ints[i]] = i;
  UOp *g = mix_permute(incoming(rw), inv, n);
  return grads_of(rw, root, &g, 1);
}

/* FLIP: flip the same axes back */
static UOp *grad_flip(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  int axes[TG_MAX_DIMS], n = 0;
  for (uint32_t i = 0; i < root->arg.len && i < TG_MAX_DIMS; i++)
    if (root->arg.ints[i]) axes[n++] = (int)i;
  UOp *g = mix_flip(incoming(rw), axes, n);
  return grads_of(rw, root, &g, 1);
}

/* STACK: element i of the stack gets row i of the gradient */
static UOp *grad_stack(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *ctx = incoming(rw);
  Shape gs;
  if (!mix_shape(ctx, &gs) || gs.ndim < 1) {
    ((GradCtx *)rw->ctx)->failed = true;
    return root;
  }
  UOp *stack_g[TG_MAX_DIMS * 4], **g = root->nsrc <= TG_ARRAY_LEN(stack_g) ? stack_g : tg_malloc(root->nsrc * sizeof *g);
  for (uint32_t i = 0; i < root->nsrc; i++) {
    int64_t bounds[2 * TG_MAX_DIMS];
    bounds[0] = i, bounds[1] = i + 1;
    for (int k = 1; k < gs.ndim; k++) bounds[2 * k] = 0, bounds[2 * k + 1] = gs.d[k];
    g[i] = mix_reshape(mix_shrink(ctx, bounds, gs.ndim), gs.d + 1, gs.ndim - 1);
  }
  UOp *r = grads_of(rw, root, g, root->nsrc);
  if (g != stack_g) tg_free(g);
  return r;
}

/* ------------------------------------------------------------------------------------------ buffers, copies */

static UOp *grad_pass(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g = incoming(rw);
  return grads_of(rw, root, &g, 1);
}

static UOp *grad_contiguous_backward(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  /* a hinted CONTIGUOUS_BACKWARD (uop.h ContigHint) makes its gradient a copy with the same hint */
  UOp *in = incoming(rw);
  UOp *g = root->arg.kind == ARG_INT ? mix_contiguous_hint(in, (ContigHint)root->arg.i) : mix_contiguous(in);
  return grads_of(rw, root, &g, 1);
}

/* COPY: copy the gradient back to the source's device (tinygrad: ctx.copy_to_device(ret.src[0].device)) */
static UOp *grad_copy(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *ctx = incoming(rw);
  const char *dev = mix_device_name(root->src[0]);
  UOp *g = dev ? uop_new(TG_OP_COPY, ctx->dtype, &ctx, 1, arg_str(dev)) : ctx;
  return grads_of(rw, root, &g, 1);
}

/* TUPLE: its gradient is a TUPLE already, one element per source */
static UOp *grad_tuple(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *ctx = incoming(rw);
  if (ctx->op != TG_OP_TUPLE || ctx->nsrc != root->nsrc) return root;
  return ctx;
}

/* assign and clone: AFTER(buffer, STORE(buffer, value)) and the STORE pass the gradient to the stored value */
static UOp *grad_to_stored(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g[2] = {no_grad(), incoming(rw)};
  return grads_of(rw, root, g, 2);
}

/* multi-device and functions are not built by this port's Tensor API yet: a clear error rather than a guess */
static UOp *grad_unsupported(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: gradient: gradient through %s not supported yet", uop_op_name(uop_op(root)));
  ((GradCtx *)rw->ctx)->failed = true;
  return root;
}

/* BITCAST reinterprets bits: no gradient */
static UOp *grad_bitcast(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  UOp *g = no_grad();
  return grads_of(rw, root, &g, 1);
}

/* CUSTOM_GRAD(value, inputs...): the value's own graph takes the incoming gradient (inputs it still reaches, like a
 * conv's weight, get theirs from it); the named rule gives the inputs' gradients. "conv2d_input:groups:py:px": value
 * is a stride-1 conv2d of DETACH(x) with w (src[1], src[2]), its groups and padding (py, px); x's gradient is the
 * transposed convolution of the incoming gradient (tensor/reduce.c mix_conv2d_input_grad). */
static UOp *grad_custom(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(m);
  long long py, px;
  int groups;
  if (root->nsrc != 3 || sscanf(root->arg.str, "conv2d_input:%d:%lld:%lld", &groups, &py, &px) != 3) {
    ((GradCtx *)rw->ctx)->failed = true;
    tg_set_error(TG_ERR_UNSUPPORTED, "%s: no gradient rule named \"%s\"", mix_ctx_op(), root->arg.str);
    return root;
  }
  UOp *g[3] = {incoming(rw), mix_conv2d_input_grad(incoming(rw), root->src[2], groups, py, px), no_grad()};
  return grads_of(rw, root, g, 3);
}

/* pm_gradient, in tinygrad's order */
static const Rule gradient_rules[] = {
  RULE("CAST", grad_cast, NULL),
  RULE("RECIPROCAL", grad_reciprocal, NULL),
  RULE("SIN", grad_sin, NULL),
  RULE("LOG2", grad_log2, NULL),
  RULE("EXP2", grad_exp2, NULL),
  RULE("SQRT", grad_sqrt, NULL),
  RULE("TRUNC", grad_trunc, NULL),
  RULE("CMPLT|CMPNE", grad_none2, NULL),
  RULE("ADD", grad_add, NULL),
  RULE("(POW b e)", grad_pow, NULL),
  RULE("(=MAX x y)", grad_max, NULL),
  RULE("MUL", grad_mul, NULL),
  RULE("WHERE", grad_where, NULL),
  RULE("REDUCE", grad_reduce, NULL),
  RULE("CONTIGUOUS", grad_pass, NULL),
  RULE("(CONTIGUOUS_BACKWARD x)", grad_contiguous_backward, NULL),
  RULE("CUSTOM_GRAD", grad_custom, NULL),
  RULE("RESHAPE", grad_reshape, NULL),
  RULE("EXPAND", grad_expand, NULL),
  RULE("PAD", grad_pad, NULL),
  RULE("SHRINK", grad_shrink, NULL),
  RULE("PERMUTE", grad_permute, NULL),
  RULE("FLIP", grad_flip, NULL),
  RULE("STACK", grad_stack, NULL),
  RULE("COPY", grad_copy, NULL),
  RULE("UNSHARD", grad_unsupported, NULL),
  RULE("TUPLE", grad_tuple, NULL),
  RULE("(AFTER _ CALL)", grad_unsupported, NULL),
  RULE("(AFTER _ STORE)", grad_to_stored, NULL),
  RULE("(STORE _ _)", grad_to_stored, NULL),
  RULE("BITCAST", grad_bitcast, NULL),
  RULE("FUNCTION|CALL|GETTUPLE", grad_unsupported, NULL),
};

const RuleSet *grad_rules(void) {
  static RuleSet *pm; /* built once, lives for the process like the other rule sets */
  if (!pm) pm = PM_NEW("pm_gradient", gradient_rules);
  return pm;
}
