/* opt_heuristic.h — what the heuristic's files share (opt_heuristic.c: hand_coded_optimizations; opt_conv.c: its GPU
 * conv steps; opt_quant.c: its CPU steps over quantized weights): the kernel's opt axes as sizes and types (Shape), small predicates over them, and the conv steps. */
#ifndef TG_OPT_HEURISTIC_H
#define TG_OPT_HEURISTIC_H

#include "cg_internal.h"
#include "opt.h"

typedef struct Shape {
  UOpVec rngs;
  int n;
  int64_t size[64];
  bool known[64]; /* the size is a constant */
  AxisType type[64];
} Shape;

/* the scheduler's axes now (sh->rngs is the caller's to free) */
void opt_shape_load(const OptScheduler *s, Shape *sh);
/* the coefficient of rng in an index that is a sum of (constant) multiples of ranges, 0 when absent or not linear */
int64_t opt_term_coef(UOp *idx, UOp *rng);
/* a matmul-like kernel: its first REDUCE adds a product of two loads (through a CAST or not); the indexes of the two
 * loads (ia, ib) in the product's source order */
bool opt_sum_of_product(const OptScheduler *s, UOp **red, UOp **mul, UOp **ia, UOp **ib);
/* the opt axis of the range with this id (its size in *size), -1 when gone */
int opt_axis_of_id(const OptScheduler *s, int64_t id, int64_t *size);

static inline void shape_load(const OptScheduler *s, Shape *sh) { opt_shape_load(s, sh); }
static inline int64_t term_coef(UOp *idx, UOp *rng) { return opt_term_coef(idx, rng); }
static inline bool sum_of_product(const OptScheduler *s, UOp **red, UOp **mul, UOp **ia, UOp **ib) {
  return opt_sum_of_product(s, red, mul, ia, ib);
}
static inline int axis_of_id(const OptScheduler *s, int64_t id, int64_t *size) { return opt_axis_of_id(s, id, size); }

static inline bool is_upcastable(const Shape *sh, int i) {
  return (sh->type[i] == AXIS_GLOBAL || sh->type[i] == AXIS_LOCAL || sh->type[i] == AXIS_WEAK) && sh->known[i] &&
         sh->size[i] > 1;
}
static inline bool is_unrollable(const Shape *sh, int i) {
  return (sh->type[i] == AXIS_GROUP_REDUCE || sh->type[i] == AXIS_REDUCE) && sh->known[i] && sh->size[i] > 1;
}
static inline bool is_reduce_type(AxisType t) { return t == AXIS_REDUCE || t == AXIS_UNROLL || t == AXIS_GROUP_REDUCE; }
static inline int count_type(const Shape *sh, AxisType a, AxisType b) {
  int c = 0;
  for (int i = 0; i < sh->n; i++) c += sh->type[i] == a || sh->type[i] == b;
  return c;
}
static inline bool try_opt(OptScheduler *s, OptOp op, int axis, int arg) {
  Opt o = {(int32_t)op, axis, arg};
  return opt_apply(s, o) == TG_OK;
}
static inline bool in_slice(UOp *root, UOp *x) { return uop_in_backward_slice(root, x); }
/* Axes by range id, which an opt keeps while axis indexes move (an axis upcast whole leaves the shape): the id of
 * axis i, the size of the range with this id now (0: gone), and an opt on it by amt (0: its whole size). */
static inline int64_t range_id(const Shape *sh, int i) { return sh->rngs.data[i]->arg.range->axis_id; }
static inline int64_t size_of_id(const OptScheduler *s, int64_t id) {
  int64_t sz = 0;
  return axis_of_id(s, id, &sz) >= 0 ? sz : 0;
}
static inline bool opt_on_id(OptScheduler *s, OptOp op, int64_t id, int64_t amt) {
  int64_t sz = 0;
  int ax = axis_of_id(s, id, &sz);
  return ax >= 0 && try_opt(s, op, ax, (int)(amt ? amt : sz));
}
/* the lanes upcast or unrolled so far */
static inline int64_t upcast_size(const Shape *sh) {
  int64_t p = 1;
  for (int i = 0; i < sh->n; i++)
    if (sh->type[i] == AXIS_UPCAST || sh->type[i] == AXIS_UNROLL) p *= sh->size[i];
  return p;
}
/* the ranges used in WHERE conditions (gates from stack/cat/pad) */
void opt_where_gate_ranges(UOp *ast, UOpVec *out);

/* opt_quant.c: the CPU steps for products over quantized weights and int8 activations (each true when it chose) */
bool opt_cpu_quant_gemv(OptScheduler *s, Shape *sh);
void opt_cpu_quant_select_unroll(OptScheduler *s, Shape *sh);
bool opt_cpu_int8_dot(OptScheduler *s, Shape *sh);
void opt_int8_prefill_tiles(OptScheduler *s, Shape *sh);

/* opt_conv.c: the conv steps (GPU_CONV, GPU_CONV_TC); true when they chose the kernel's opts */
bool opt_gpu_conv(OptScheduler *s);
bool opt_gpu_conv_tc(OptScheduler *s, int tc_select, int use_tc);

#endif
