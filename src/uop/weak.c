/* weak.c — committing weak dtypes (tinygrad uop/weak.py, the part symbolic needs): commit_weak, which gives a weak
 * value a concrete dtype; pm_cast_weak, which makes a concrete CAST over weak math compute at least at the default
 * width before narrowing (reference section 3, commit point (c)); and pm_lower_weak's rule for two stacked weak
 * casts. The rest of pm_lower_weak (index dtype lowering) belongs to codegen. */
#include "symbolic.h"

/* the width weak math is computed at: the default float, or int (long when the bounds overflow int32) */
static const DType *default_width(UOp *u) {
  if (u->dtype == DT_WEAKFLOAT) return dt_default_float();
  i128 lo = uop_vmin(u), hi = uop_vmax(u);
  return lo < INT32_MIN || hi > INT32_MAX ? DT_INT64 : DT_INT32;
}

UOp *uop_commit_weak(UOp *s, const DType *dt) {
  /* a CONST commits directly at dt (Invalid stays Invalid); anything else takes a CAST */
  if (s->op == TG_OP_CONST) return uop_is_invalid(s) ? s : uop_const(dt, s->arg.c);
  return uop_cast(s, dt);
}

/* u with every weak source committed at dt; u's dtype is re-derived from the new sources */
static UOp *commit_srcs_at(UOp *u, const DType *dt) {
  UOp **src = tg_malloc((u->nsrc + 1) * sizeof(UOp *));
  for (uint32_t i = 0; i < u->nsrc; i++) src[i] = dt_is_weak(u->src[i]->dtype) ? uop_commit_weak(u->src[i], dt) : u->src[i];
  UOp *r = uop_new_tagged(uop_op(u), NULL, src, u->nsrc, u->arg, u->tag);
  tg_free(src);
  return r;
}

/* a concrete CAST over a weak ALU states the width the value lives at; that width is a floor, never a narrowing */
static UOp *cast_weak_srcs(RwCtx *rw, UOp *root, UOp **m) { /* c, u */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *c = m[0], *u = m[1];
  if (dt_is_weak(c->dtype) || dt_weak(c->dtype) != u->dtype) return NULL;
  const DType *at = dt_least_upper(c->dtype, default_width(u));
  return uop_cast(commit_srcs_at(u, at), c->dtype);
}
static UOp *cast_weak_const(RwCtx *rw, UOp *root, UOp **m) { /* c, u */
  TG_UNUSED(rw), TG_UNUSED(root);
  return uop_commit_weak(m[1], m[0]->dtype);
}

static const Rule cast_weak_rules[] = {
    RULE("c:(CAST u:ALU.weaks)", cast_weak_srcs, NULL),
    RULE("c:(CAST u:CONST.weaks)", cast_weak_const, NULL),
};

/* two stacked weak casts are two kind conversions (weakint truncates before weakfloat re-lifts): each resolves at
 * its own kind's default dtype (tinygrad pm_lower_weak; seed "fix cast to weak twice") */
static UOp *stacked_weak_casts(RwCtx *rw, UOp *root, UOp **m) { /* u, x */
  TG_UNUSED(rw), TG_UNUSED(root);
  UOp *u = m[0], *x = m[1];
  if (dt_is_weak(x->dtype)) return NULL;
  return uop_cast(uop_cast(uop_cast(x, default_width(u->src[0])), default_width(u)), u->dtype);
}

static const Rule lower_weak_casts_rules[] = {
    RULE("u:(CAST.weaks (CAST.weaks x))", stacked_weak_casts, NULL),
};

const RuleSet *sym_lower_weak_casts(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pm_lower_weak_casts", lower_weak_casts_rules);
  return pm;
}

const RuleSet *sym_cast_weak(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("pm_cast_weak", cast_weak_rules);
  return pm;
}
