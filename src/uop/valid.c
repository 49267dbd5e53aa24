/* valid.c — simplification under a valid (tinygrad symbolic.py, "simplify_valid"): an index gated by a condition,
 * cond.where(idx, Invalid), only matters where cond holds, so idx may be simplified assuming it.
 *
 * parse_valid reads one clause as a bound on an expression (X < c, c < X, (X < c) != True); uop_given_valid replaces
 * every bounded X by a fresh Variable with the tighter range, simplifies, and puts X back. For a lower bound of 1 on a
 * sum of irreducible terms (the simplex X0+X1+... > 0) it also tries each Xi >= 1 in turn and keeps a result all of
 * them agree on. simplify_valid drops clauses of an AND chain that the other clauses imply. */
#include <stdio.h>

#include "symbolic.h"

/* tinygrad's simplify(): the `symbolic` tier (no valid rules, so this never re-enters valid simplification). */
static UOp *simplify_symbolic(UOp *u) {
  if (u->op == TG_OP_CONST) return u;
  UOp *r = pm_graph_rewrite(u, sym_symbolic(), NULL, 0, NULL, "simplify");
  return r ? r : u;
}

static UOp *substitute1(UOp *root, UOp *from, UOp *to) { return uop_substitute(root, &from, &to, 1); }

static bool in_slice_with_self(UOp *root, UOp *x) { return root == x || uop_in_backward_slice(root, x); }

/* One clause as a bound: X <= c (is_upper) or X >= c. */
static bool parse_valid(UOp *v, UOp **expr, bool *is_upper, i128 *c) {
  if (v->op == TG_OP_CMPNE && v->src[1]->op == TG_OP_CONST && v->src[0]->op == TG_OP_CMPLT &&
      dt_is_int(v->src[0]->src[0]->dtype)) {
    Const k = uop_const_val(v->src[1]);
    bool is_one = (k.kind == CK_BOOL && k.b) || (k.kind == CK_INT && k.i == 1) || (k.kind == CK_FLOAT && k.f == 1.0);
    if (is_one) { /* (X < c) != True  ->  X >= c */
      *expr = v->src[0]->src[0], *is_upper = false, *c = uop_vmin(v->src[0]->src[1]);
      return true;
    }
  }
  if (v->op == TG_OP_CMPLT && dt_is_int(v->src[0]->dtype)) {
    if (v->src[0]->op == TG_OP_CONST) { /* c < X  ->  X >= c+1 */
      if (v->src[0]->arg.c.kind != CK_INT) return false;
      *expr = v->src[1], *is_upper = false, *c = (i128)v->src[0]->arg.c.i + 1;
      return true;
    }
    /* X < c  ->  X <= c-1 */
    *expr = v->src[0], *is_upper = true, *c = uop_vmax(v->src[1]) - 1;
    return true;
  }
  return false;
}

typedef struct Bound {
  UOp *expr;
  bool has_lo, has_hi;
  i128 lo, hi;
} Bound;

/* A fresh Variable in its kernel-side form (an ALU PARAM, tinygrad's variable(param=True)): symbolic folds a PARAM
 * whose range is one value into that constant. */
static UOp *fake_variable(size_t i, i128 lo, i128 hi, const DType *d) {
  ParamArg p;
  memset(&p, 0, sizeof p);
  p.slot = -1, p.multiple_of = 1, p.axis = -1, p.vmin = lo, p.vmax = hi, p.dtype = d, p.addrspace = ADDR_ALU;
  snprintf(p.name, sizeof p.name, "fake%zu", i);
  return uop_new(TG_OP_PARAM, d, NULL, 0, arg_param(&p));
}

static bool is_irreducible_term(const UOp *u) { return op_has(uop_op(u), OPP_IRREDUCIBLE) || uop_is_variable(u); }

/* tinygrad uop_given_valid: always returns a node (u itself when nothing was learned). */
static UOp *given_valid(UOp *valid, UOp *u, bool try_simplex) {
  TG_VEC(Bound) bounds = {0};
  UOpVec clauses = {0};
  uop_split(valid, TG_OP_AND, &clauses);
  for (size_t i = 0; i < clauses.len; i++) {
    UOp *expr;
    bool is_upper;
    i128 c;
    if (!parse_valid(clauses.data[i], &expr, &is_upper, &c)) continue;
    Bound *b = NULL;
    for (size_t k = 0; k < bounds.len && !b; k++)
      if (bounds.data[k].expr == expr) b = &bounds.data[k];
    if (!b) {
      Bound nb = {expr, false, false, 0, 0};
      tg_vec_push(&bounds, nb);
      b = &bounds.data[bounds.len - 1];
    }
    if (is_upper) b->has_hi = true, b->hi = c;
    else b->has_lo = true, b->lo = c;
  }
  tg_vec_free(&clauses);

  UOp **from = tg_calloc(bounds.len + 1, sizeof(UOp *)), **to = tg_calloc(bounds.len + 1, sizeof(UOp *));
  for (size_t i = 0; i < bounds.len; i++) {
    Bound *b = &bounds.data[i];
    i128 v0 = b->has_lo ? b->lo : uop_vmin(b->expr), v1 = b->has_hi ? b->hi : uop_vmax(b->expr);
    from[i] = b->expr, to[i] = fake_variable(i, v0, v1, b->expr->dtype);
    if (!try_simplex) continue;

    /* candidate sets: the whole clause; and for a simplex X0+X1+... >= 1, each Xi >= 1 */
    UOpVec parts = {0};
    bool simplex = false;
    if (b->expr->op == TG_OP_ADD && v0 == 1) {
      uop_split(b->expr, TG_OP_ADD, &parts);
      simplex = true;
      for (size_t k = 0; k < parts.len; k++) simplex &= is_irreducible_term(parts.data[k]);
    }
    for (int cand = 0; cand < (simplex ? 2 : 1); cand++) {
      size_t n = cand == 0 ? 1 : parts.len;
      bool all_in = true;
      for (size_t k = 0; k < n; k++) all_in &= in_slice_with_self(u, cand == 0 ? b->expr : parts.data[k]);
      if (!all_in) continue;
      UOp **outs = tg_calloc(n, sizeof(UOp *));
      for (size_t k = 0; k < n; k++) {
        UOp *X = cand == 0 ? b->expr : parts.data[k];
        UOp *nX = cand == 0 ? to[i] : fake_variable(i, 1, uop_vmax(X), X->dtype);
        outs[k] = simplify_symbolic(substitute1(simplify_symbolic(substitute1(u, X, nX)), nX, X));
      }
      bool same = true;
      for (size_t k = 1; k < n; k++) same &= outs[k] == outs[0];
      if (same) {
        u = outs[0];
      } else if (u->op == TG_OP_STACK && u->nsrc == 2) {
        /* lanes of a 2-wide index: keep each lane every branch agrees on */
        bool pairs = true, same0 = true, same1 = true;
        for (size_t k = 0; k < n; k++) pairs &= outs[k]->op == TG_OP_STACK && outs[k]->nsrc == 2;
        for (size_t k = 1; pairs && k < n; k++) {
          same0 &= outs[k]->src[0] == outs[0]->src[0];
          same1 &= outs[k]->src[1] == outs[0]->src[1];
        }
        if (pairs) {
          if (same0) {
            UOp *s[2] = {outs[0]->src[0], u->src[1]};
            u = uop_replace_src(u, s, 2);
          }
          if (same1) {
            UOp *s[2] = {u->src[0], outs[0]->src[1]};
            u = uop_replace_src(u, s, 2);
          }
        }
      }
      tg_free(outs);
    }
    tg_vec_free(&parts);
  }

  /* all the bounds together (whole expressions only) */
  if (bounds.len) {
    UOp *s_uop = uop_substitute(u, from, to, bounds.len);
    if (s_uop != u) u = simplify_symbolic(uop_substitute(simplify_symbolic(s_uop), to, from, bounds.len));
  }
  tg_free(from);
  tg_free(to);
  tg_vec_free(&bounds);
  return u;
}

UOp *uop_given_valid(UOp *valid, UOp *u) {
  UOpScope scope = uop_scope_begin();
  UOp *r = uop_scope_end_keep(scope, given_valid(valid, u, true));
  return r == u ? NULL : r;
}

/* ---- simplify_valid ---- */

static UOp *uprod_bool(UOp *const *v, size_t n) {
  UOp *acc = v[0];
  for (size_t i = 1; i < n; i++) acc = uop_and(acc, v[i]);
  return acc;
}

/* Clauses whose bounded expression appears in many other clauses go first, so those get simplified by it. */
static long valid_priority(UOp *v, UOp *const *valids, size_t n) {
  UOp *expr;
  bool is_upper;
  i128 c;
  if (!parse_valid(v, &expr, &is_upper, &c)) return 0;
  long p = 0;
  for (size_t i = 0; i < n; i++)
    if (in_slice_with_self(valids[i], expr)) p--;
  return p;
}

static UOp *simplify_valid(UOp *valid) {
  if (uop_op_in_backward_slice_with_self(valid, TG_OP_INDEX)) return NULL; /* only for index math */
  UOpVec valids = {0};
  uop_split(valid, TG_OP_AND, &valids);
  size_t n = valids.len;
  long *prio = tg_calloc(n, sizeof(long));
  UOp **sorted = tg_calloc(n, sizeof(UOp *)), **ret = tg_calloc(n, sizeof(UOp *));
  for (size_t i = 0; i < n; i++) prio[i] = valid_priority(valids.data[i], valids.data, n), sorted[i] = valids.data[i];
  /* stable insertion sort by priority */
  for (size_t i = 1; i < n; i++) {
    UOp *v = sorted[i];
    long p = prio[i];
    size_t j = i;
    for (; j > 0 && prio[j - 1] > p; j--) sorted[j] = sorted[j - 1], prio[j] = prio[j - 1];
    sorted[j] = v, prio[j] = p;
  }
  size_t nret = 0;
  for (size_t i = 0; i < n; i++) {
    bool dup = false;
    for (size_t k = 0; k < i; k++) dup |= sorted[k] == sorted[i];
    if (dup) continue;
    UOp *stmt = sorted[i];
    if (nret) stmt = given_valid(uprod_bool(ret, nret), stmt, true);
    ret[nret++] = stmt;
  }
  /* compared with the sorted clauses, as tinygrad does: a new order alone is no rewrite */
  bool changed = nret != n;
  for (size_t i = 0; i < nret && !changed; i++) changed = ret[i] != sorted[i];
  UOp *result = changed ? uprod_bool(ret, nret) : NULL;
  tg_free(prio);
  tg_free(sorted);
  tg_free(ret);
  tg_vec_free(&valids);
  return result;
}

UOp *uop_simplify_valid(UOp *valid) {
  UOpScope scope = uop_scope_begin();
  return uop_scope_end_keep(scope, simplify_valid(valid));
}

/* ---- the rule set ---- */

static UOp *rule_simplify_valid(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw), TG_UNUSED(m);
  return uop_simplify_valid(root);
}

/* cond.where(x, Invalid): simplify the index x assuming cond. Pure index math only: a LOAD inside x runs even where
 * cond is false, so the valid of its INDEX must not be simplified away under cond (seed: gated load keeps its valid). */
static UOp *gated_given_valid(RwCtx *rw, UOp *root, UOp **m) {
  TG_UNUSED(rw);
  UOp *cond = m[0], *x = m[1];
  if (x->dtype != DT_WEAKINT || uop_op_in_backward_slice_with_self(x, TG_OP_INDEX)) return NULL;
  /* image indexing (openpilot) keeps its div/mod for the image lowering */
  if (tg_getenv_int("IMAGE", 0) > 0) {
    static const TgOp divmod_ops[] = {TG_OP_CDIV, TG_OP_CMOD, TG_OP_FLOORDIV, TG_OP_FLOORMOD};
    for (size_t i = 0; i < TG_ARRAY_LEN(divmod_ops); i++)
      if (uop_op_in_backward_slice_with_self(x, divmod_ops[i])) return NULL;
  }
  UOpScope scope = uop_scope_begin();
  UOp *nx = uop_scope_end_keep(scope, given_valid(cond, x, false));
  return nx == x ? NULL : uop_where(cond, nx, root->src[2]);
}

static const Rule simplify_valid_rules[] = {
  /* an AND chain of valids: drop or simplify clauses implied by the others */
  RULE("AND.bool", rule_simplify_valid, NULL),
  /* a gated index: simplify it given its gate */
  RULE("(WHERE cond x invalid)", gated_given_valid, NULL),
};

const RuleSet *sym_simplify_valid(void) {
  static RuleSet *pm;
  if (!pm) pm = PM_NEW("simplify_valid", simplify_valid_rules);
  return pm;
}
