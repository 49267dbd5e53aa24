/* cg_internal.h — helpers shared by the codegen passes (not part of the public codegen interface): tinygrad's
 * UOp.ranges / ended_ranges, range args, and the pass entry points codegen.c chains together. */
#ifndef TG_CG_INTERNAL_H
#define TG_CG_INTERNAL_H

#include "codegen.h"
#include "../uop/symbolic.h"

/* ---- ranges (tinygrad UOp.ranges): the RANGEs a node lives in, in tinygrad's insertion order ---- */
typedef struct CgRanges {
  UOpMap memo; /* node -> UOpVec* */
} CgRanges;
void cg_ranges_init(CgRanges *r);
void cg_ranges_free(CgRanges *r);
/* The ranges of u (memoized; the vector belongs to r). */
const UOpVec *cg_ranges_of(CgRanges *r, UOp *u);
bool cg_vec_has(const UOpVec *v, const UOp *u);
/* The ranges an op ends (tinygrad ended_ranges): REDUCE/END/STAGE src[1:], AFTER: those of its dependencies. */
void cg_ended_ranges(UOp *u, UOpVec *out);

/* ---- RANGE args ---- */
static inline AxisType cg_axis_type(const UOp *r) { return (AxisType)r->arg.range->axis_type; }
UOp *cg_range_retype(UOp *r, AxisType t);                     /* same range, other axis type */
UOp *cg_range_resize(UOp *r, UOp *end);                       /* same arg, other end */
UOp *cg_range_new(UOp *end, const RangeArg *a);               /* RANGE of end's dtype with arg a */
/* tinygrad's sort key of a range arg (axis id, sub ids..., then axis type) */
int cg_range_arg_cmp(const RangeArg *a, const RangeArg *b);

/* ---- flatten_range rule set (tinygrad pm_flatten_range) ---- */
const RuleSet *cg_pm_flatten_range(void);

/* ---- passes (codegen.c chains them; each returns the new sink or NULL with the error set) ---- */
UOp *cg_load_collapse(UOp *sink);                     /* pm_load_collapse: indexing by a tensor without a loop */
UOp *cg_split_ranges(UOp *sink);                      /* pm_split_ranges */
UOp *cg_simplify_ranges(UOp *sink);                   /* pm_simplify_ranges: merge adjacent, shrink gated */
UOp *cg_apply_opts(UOp *sink, const Renderer *ren);   /* opts_to_apply | heuristic | NOOPT; kernel name (opt.c) */
UOp *cg_expand(UOp *sink, const Renderer *ren);       /* UPCAST/UNROLL ranges -> lanes (cg_expand.c) */
#define CG_TAG_VECTOR_LANES 0x766c /* a STACK of the lanes of a vector accumulator's addend (cg_expand -> cg_vectorize) */
/* WMMA(a, b, 0) + x as WMMA(a, b, x) (tinygrad pm_wmma_add), NULL when w is not such a WMMA (cg_expand.c) */
UOp *cg_wmma_fold_add(UOp *w, UOp *x);
UOp *cg_vectorize(UOp *sink, const Renderer *ren);    /* lane STACKs -> vector ALU ops and loads (cg_vectorize.c) */
/* the int8 dot products cg_vectorize renders with the renderer's dot_u8i8: MUL(CAST.int(u8), CAST.int(i8)) (either
 * order); the operands in *u, *s when not NULL. cg_has_int8_dot: x's graph holds one */
bool cg_int8_dot_term(UOp *t, UOp **u, UOp **s);
bool cg_has_int8_dot(UOp *x);
UOp *cg_merge_reduce_ends(UOp *sink);                 /* one END for the accumulators of one reduce loop */
UOp *cg_end_mergeable(UOp *const *src, size_t n);     /* an END reduce lowering makes (merge candidate) */
bool cg_reduce_is_lane(const UOp *r);                 /* a REDUCE the expander made for one upcast lane */
UOp *cg_reduce_unparented(UOp *sink);                 /* pm_reduce_unparented (inside postopt symbolic) */
const RuleSet *cg_pm_reduce_unparented(void);
UOp *cg_remove_reduces(UOp *sink);                    /* REDUCE -> REG accumulator */
UOp *cg_add_gpudims(UOp *sink, const Renderer *ren);  /* GLOBAL/LOCAL -> gidx/lidx SPECIALs; THREAD -> core_id */
UOp *cg_group_reduces(UOp *sink);                     /* GROUP_REDUCE: partials through LOCAL memory */
UOp *cg_add_implicit_barriers(UOp *sink);             /* BARRIER between LOCAL stores and loads */
UOp *cg_add_loads(UOp *sink);                         /* LOAD around values read from memory */
const RuleSet *cg_pm_lower_index_dtype(void);         /* weakint -> int / long */
const RuleSet *cg_pm_commit_weak(void);
const RuleSet *cg_pm_cast_float_alu(void);
const RuleSet *cg_pm_early_decomp(const Renderer *ren);   /* symbolic_simple + simplifying patterns */
const RuleSet *cg_pm_late_decomp(const Renderer *ren);    /* + late patterns + transcendentals */
const RuleSet *cg_pm_pow(void);                       /* POW -> xpow (with sym, as tinygrad's sym) */
const RuleSet *cg_pm_transcendental(void);             /* EXP2/LOG2/SIN/SQRT/POW (ctx: the Renderer) */
const RuleSet *cg_pm_move_gates_from_index(void);
const RuleSet *cg_pm_indexing_simplify(void);          /* an INDEX simplified under its valid */
const RuleSet *cg_pm_move_where_on_load(void);        /* where(c, load, 0) -> load gated by c */
const RuleSet *cg_pm_split_ends(void);
const RuleSet *cg_pm_remove_invalid(void);
const RuleSet *cg_pm_extra_clang(void);
UOp *cg_memory_coalescing(UOp *sink, const Renderer *ren); /* adjacent loads/stores -> one vector access */
/* an index as base + constant (*base NULL: a constant index); false for an Invalid index (cg_coalesce.c) */
bool cg_split_offset(UOp *idx, UOp **base, int64_t *off);
UOp *cg_index_at(UOp *base, int64_t off);             /* base + off, or the constant off when base is NULL */
UOp *cg_gated_index(UOp *valid, UOp *idx);            /* WHERE(valid, idx, Invalid); idx when valid is NULL */
UOp *cg_casted_consts(UOp *sink);
UOp *cg_add_control_flow(UOp *sink);
UOp *cg_number_params(UOp *sink);

/* constant helpers */
UOp *cg_weak_const(const DType *like, Const v); /* a CONST of the weak dtype of `like`'s kind (bool stays bool) */

#endif
