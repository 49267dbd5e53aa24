/* codegen.c — the codegen pipeline (tinygrad codegen/__init__.py full_rewrite_to_sink) for a renderer without locals
 * and without opt search: the stages of codegen.h in tinygrad's order, each a pm_graph_rewrite with its rule sets. */
#include "cg_internal.h"

#include <stdio.h>

#include "../uop/spec.h"

/* a kernel AST still holding movement ops would need pm_mops (rangeify's movement-op rewrite) */
static bool check_input(UOp *sink) {
  UOpVec topo = {0};
  uop_toposort(sink, NULL, NULL, &topo);
  bool ok = true;
  for (size_t i = 0; i < topo.len && ok; i++) {
    UOp *u = topo.data[i];
    if (op_has(uop_op(u), OPP_MOVEMENT) || u->op == TG_OP_STAGE || u->op == TG_OP_WMMA || u->op == TG_OP_UNSHARD ||
        u->op == TG_OP_SPECIAL) {
      tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: %s in a kernel AST not supported yet", uop_op_name(uop_op(u)));
      ok = false;
    }
    if (u->op == TG_OP_RANGE && u->dtype->count > 1) {
      tg_set_error(TG_ERR_UNSUPPORTED, "tinygrad.c: codegen: vector RANGE not supported yet");
      ok = false;
    }
  }
  tg_vec_free(&topo);
  return ok;
}

/* tinygrad's sym (+ its POW rule, which lives here with the transcendentals) */
static const RuleSet *sym_pow(void) {
  static const RuleSet *pm;
  if (!pm) pm = pm_concat(sym_sym(), cg_pm_pow());
  return pm;
}

static const RuleSet *sym_flatten(void) {
  static const RuleSet *pm;
  if (!pm) pm = pm_concat(sym_pow(), cg_pm_flatten_range());
  return pm;
}

#define STEP(expr)          \
  do {                      \
    s = (expr);             \
    if (!s) goto fail;      \
  } while (0)

/* a stage boundary under SPEC=1 (uop/spec.h): the graph so far must be legal at `stage` */
#define VERIFY(stage, where)                                 \
  do {                                                       \
    if (spec_verify(s, (stage), (where)) != TG_OK) goto fail; \
  } while (0)

static UOp *optimize(UOp *s, const Renderer *ren) {
  if (s->op != TG_OP_SINK) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "codegen: a kernel AST is a SINK, got %s", uop_op_name(uop_op(s)));
    return NULL;
  }
  if (!check_input(s)) return NULL;
  VERIFY(SPEC_TENSOR, "codegen: the kernel AST");
  STEP(cg_load_collapse(s));
  STEP(cg_split_ranges(s));
  STEP(pm_graph_rewrite(s, sym_flatten(), NULL, 0, NULL, "initial symbolic"));
  STEP(cg_simplify_ranges(s));
  STEP(cg_apply_opts(s, ren));
  return s;
fail:
  return NULL;
}

UOp *cg_optimize(UOp *kernel_sink, const Renderer *ren) {
  UOpScope sc = uop_scope_begin();
  UOp *s = optimize(kernel_sink, ren);
  return uop_scope_end_keep(sc, s);
}

UOp *cg_lower(UOp *kernel_sink, const Renderer *ren) {
  if (!ren) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "cg_lower: no renderer");
    return NULL;
  }
  static const RuleSet *postopt, *lower_idx, *final_pm, *devec, *extra_sym;
  if (!postopt) {
    devec = pm_concat(sym_symbolic_simple(), cg_pm_indexing_simplify());
    extra_sym = pm_concat(sym_pow(), cg_pm_indexing_simplify());
    postopt = pm_concat(pm_concat(sym_pow(), cg_pm_move_where_on_load()),
                        pm_concat(cg_pm_flatten_range(), cg_pm_reduce_unparented()));
    lower_idx = pm_concat(pm_concat(sym_symbolic_simple(), cg_pm_lower_index_dtype()), cg_pm_indexing_simplify());
    final_pm = pm_concat(pm_concat(pm_concat(cg_pm_commit_weak(), sym_cast_weak()), cg_pm_late_decomp(ren)),
                         pm_concat(cg_pm_split_ends(), cg_pm_remove_invalid()));
  }
  const RuleSet *final_with_extra = ren->extra_matcher ? pm_concat(final_pm, ren->extra_matcher()) : final_pm;
  void *rctx = (void *)(uintptr_t)ren; /* rules read the capability table through the rewrite's ctx */
  if (tg_debug_level() >= 5) { /* tinygrad prints the kernel AST at DEBUG>=5 */
    char *text = uop_str(kernel_sink);
    printf("%s\n", text);
    tg_free(text);
  }
  UOpScope sc = uop_scope_begin();
  UOp *s = optimize(kernel_sink, ren);
  if (!s) goto fail;
  STEP(pm_graph_rewrite(s, postopt, NULL, 0, NULL, "postopt symbolic"));
  STEP(cg_expand(s, ren));
  VERIFY(SPEC_FULL, "codegen: after expansion");
  STEP(cg_remove_reduces(s));
  STEP(cg_add_gpudims(s, ren));
  STEP(cg_add_loads(s));
  STEP(pm_graph_rewrite(s, devec, NULL, 0, NULL, "devectorize2"));
  STEP(pm_graph_rewrite(s, sym_pow(), NULL, 0, NULL, "early symbolic"));
  STEP(cg_memory_coalescing(s, ren));
  STEP(cg_vectorize(s, ren));
  STEP(pm_graph_rewrite(s, sym_symbolic_simple(), NULL, RW_BOTTOM_UP, NULL, "add images"));
  STEP(pm_graph_rewrite(s, extra_sym, NULL, 0, NULL, "extra symbolic"));
  STEP(pm_graph_rewrite(s, lower_idx, NULL, 0, NULL, "lower all index dtypes"));
  STEP(pm_graph_rewrite(s, sym_symbolic(), NULL, 0, NULL, "final symbolic"));
  STEP(pm_graph_rewrite(s, cg_pm_cast_float_alu(), NULL, 0, NULL, "cast float alu operands"));
  STEP(pm_graph_rewrite(s, cg_pm_early_decomp(ren), rctx, 0, NULL, "early decompositions"));
  STEP(pm_graph_rewrite(s, cg_pm_commit_weak(), NULL, 0, NULL, "decomp dtypes"));
  STEP(pm_graph_rewrite(s, cg_pm_late_decomp(ren), rctx, 0, NULL, "late decompositions"));
  STEP(pm_graph_rewrite(s, cg_pm_move_gates_from_index(), NULL, 0, NULL, "move gates from index"));
  STEP(pm_graph_rewrite(s, final_with_extra, rctx, 0, NULL, "final rewrite"));
  STEP(cg_casted_consts(s));
  STEP(cg_add_implicit_barriers(s));
  STEP(cg_add_control_flow(s));
  STEP(cg_number_params(s));
  VERIFY(SPEC_PROGRAM, "codegen: the lowered kernel");
  return uop_scope_end_keep(sc, s);
fail:
  uop_scope_end(sc);
  return NULL;
}
